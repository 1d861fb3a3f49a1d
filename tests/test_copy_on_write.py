"""Copy-on-write storages (Tensor._lazy_clone): a write copies the shared
storage first, waiting for the device, and on the current stream while it
captures (Note [accinte copy-on-write copies], Note [accinte copy-on-write
arguments])."""

import pytest
import torch



def cpu_reference(write):
    x = torch.arange(-4.0, 4.0)
    y = x._lazy_clone()
    write(y)
    return y.tolist(), x.tolist()


@pytest.mark.parametrize("write", [
    lambda y: y.add_(1),
    lambda y: y.add_(y),  # the written storage is read too
    lambda y: y.view(2, 4).mul_(3),
    lambda y: torch.add(torch.ones(8, device=y.device), 2, out=y),
    lambda y: y.__setitem__(slice(1, 3), 9.0),
    lambda y: y.copy_(torch.ones(8)),
    lambda y: y.zero_(),
], ids=["add_", "add_self", "view_mul_", "out", "setitem", "copy_", "zero_"])
def test_writing_a_lazy_clone_leaves_the_original_alone(write):
    x = torch.arange(-4.0, 4.0, device="accinte")
    y = x._lazy_clone()
    assert torch._C._is_cow_tensor(y)
    write(y)
    assert (y.cpu().tolist(), x.cpu().tolist()) == cpu_reference(write)


def test_the_copy_is_made_before_the_other_owner_writes_on_another_stream():
    # After the copy, x is the block's last owner and writes it without a
    # copy, on the default stream; y's copy (made from a held side stream)
    # must already hold x's old values. A copy merely queued on the side
    # stream would read x's new ones.
    x = torch.arange(4.0, device="accinte")
    torch.accinte.synchronize()
    y = x._lazy_clone()
    side = torch.accinte.Stream()
    with torch.accinte.stream(side):
        torch.accinte._sleep(200)
        y.add_(1)
    x.add_(100)
    torch.accinte.synchronize()
    assert (y.cpu().tolist(), x.cpu().tolist()) == ([1, 2, 3, 4], [100, 101, 102, 103])


def test_the_copy_comes_after_the_current_streams_work():
    x = torch.arange(-4.0, 4.0, device="accinte")
    torch.accinte._sleep(100)
    x.mul_(2)  # queued behind the sleep
    y = x._lazy_clone()
    y.add_(1)  # copies x's doubled values
    assert (y.cpu().tolist(), x.cpu().tolist()) == (list(range(-7, 9, 2)), list(range(-8, 8, 2)))


def test_a_copy_from_another_device_into_a_lazy_clone():
    x = torch.zeros(1 << 16, device="accinte:1")
    for _ in range(20):
        y = x._lazy_clone()
        y.copy_(torch.full((1 << 16,), 7.0, device="accinte:0"))
        torch.accinte.synchronize(0)
        torch.accinte.synchronize(1)
        assert bool((y.cpu() == 7).all()) and bool((x.cpu() == 0).all())


def test_a_lazy_clone_written_from_another_current_device_stays_on_its_device():
    x = torch.arange(4.0, device="accinte:1")
    y = x._lazy_clone()
    with torch.accinte.device(0):
        y.add_(1)
    assert y.untyped_storage().device == torch.device("accinte:1")
    assert y.cpu().tolist() == [1, 2, 3, 4]


def test_a_lazy_clone_written_in_a_graph_capture():
    # The copy is a node of the graph like the write after it (a synchronous
    # copy was refused while capturing), so each replay copies, then writes.
    x = torch.arange(-4.0, 4.0, device="accinte")
    y = x._lazy_clone()
    graph = torch.accinte.graphs.Graph()
    with torch.accinte.graphs.graph(graph):
        y.add_(1)
    graph.replay()
    graph.replay()
    torch.accinte.synchronize()
    assert (y.cpu().tolist(), x.cpu().tolist()) == (list(range(-3, 5)), list(range(-4, 4)))
