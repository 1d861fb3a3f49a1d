"""Copy-on-write storages (Tensor._lazy_clone): a write copies the shared
storage first, on the current stream and without waiting for the device
(Note [accinte copy-on-write copies], Note [accinte copy-on-write arguments])."""

import pytest
import torch

from held_stream import hold_stream


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


def test_the_copy_does_not_wait_for_another_stream():
    x = torch.arange(-4.0, 4.0, device="accinte")
    y = x._lazy_clone()
    side = torch.accinte.Stream()
    with torch.accinte.stream(side), hold_stream(timeout=10) as other:
        with torch.accinte.stream(torch.accinte.default_stream()):
            y.add_(1)
            assert y.cpu().tolist() == list(range(-3, 5))
        assert other.held()
    assert x.cpu().tolist() == list(range(-4, 4))


def test_the_copy_is_queued_after_the_current_streams_work():
    x = torch.arange(-4.0, 4.0, device="accinte")
    with hold_stream(timeout=10) as hold:
        x.mul_(2)  # queued behind the held kernel
        y = x._lazy_clone()
        y.add_(1)  # the copy, then the add, queued behind it too
        assert hold.held()
    assert (y.cpu().tolist(), x.cpu().tolist()) == (list(range(-7, 9, 2)), list(range(-8, 8, 2)))


def test_the_source_block_is_kept_until_the_copy_ran():
    # The source is freed while the copy waits on another stream; its block
    # must not be handed out again (and overwritten) on its own stream first.
    x = torch.arange(-4.0, 4.0, device="accinte")
    source_ptr = x.data_ptr()
    y = x._lazy_clone()
    side = torch.accinte.Stream()
    side.wait_stream(torch.accinte.current_stream())
    with torch.accinte.stream(side), hold_stream(timeout=10) as hold:
        y.add_(1)  # the copy from x's block is queued on the held side stream
        del x      # the last other reference: x's block goes back to its pool
        fresh = [torch.full((8,), 7.0, device="accinte") for _ in range(4)]
        with torch.accinte.stream(torch.accinte.default_stream()):
            fresh += [torch.full((8,), 7.0, device="accinte") for _ in range(4)]
        assert source_ptr not in [t.data_ptr() for t in fresh]
        assert hold.held()
    side.synchronize()  # y was copied and written on the side stream
    assert y.cpu().tolist() == list(range(-3, 5))


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
