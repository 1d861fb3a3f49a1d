"""The execution model: operators run in place, asynchronously, in stream order."""

import pytest
import torch

from held_stream import hold_stream


def busy(ms=300):
    torch.accinte._sleep(ms)
    return torch.accinte.current_stream()


def test_operators_return_before_they_run():
    a = torch.randn(256, 256, device="accinte")
    with hold_stream() as hold:
        b = a @ a          # queued behind the held kernel
        c = (b + 1).relu_()
        assert hold.held()  # nothing has run yet, but the calls returned
    torch.testing.assert_close(c.cpu(), ((a.cpu() @ a.cpu()) + 1).relu_())


def test_in_place_operators_write_device_memory():
    x = torch.zeros(1000, device="accinte")
    ptr = x.data_ptr()
    x.add_(3).mul_(2)
    assert x.data_ptr() == ptr
    assert torch.equal(x.cpu(), torch.full((1000,), 6.0))


def test_reading_a_result_waits_for_it():
    x = torch.ones(10, device="accinte")
    busy(200)
    y = x * 5
    assert y.sum().item() == 50  # .item() waits for the queued work
    busy(200)
    z = x + 1
    assert "2." in repr(z)  # printing waits too


def test_data_dependent_operators_synchronise():
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="accinte")
    busy(200)
    queued_before = torch.accinte.Event()
    queued_before.record()
    idx = torch.nonzero(x)
    assert queued_before.query()  # nonzero had to wait for the queued work
    assert idx.cpu().flatten().tolist() == [1, 3]
    assert x[x > 0].cpu().tolist() == [1.0, 2.0]


def test_work_follows_the_current_stream():
    s = torch.accinte.Stream()
    x = torch.ones(100, device="accinte")
    torch.accinte.synchronize()
    with torch.accinte.stream(s), hold_stream() as hold:
        y = x * 2
        assert hold.held() and not s.query()
        assert torch.accinte.default_stream().query()
    s.synchronize()
    assert y.sum().item() == 200


def test_shape_errors_are_raised_at_the_call():
    a = torch.ones(3, 4, device="accinte")
    b = torch.ones(5, 6, device="accinte")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(a, b)
    with pytest.raises(RuntimeError):
        a.add_(b)
    assert (a @ a.t()).sum().item() == 36  # the device keeps working


def test_launch_blocking_makes_launches_synchronous(run_python):
    out = run_python(
        """
        import torch
        torch.accinte._sleep(300)
        print(torch.accinte.current_stream().query())
        """,
        env={"ACCINTE_LAUNCH_BLOCKING": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_out_argument_of_wrong_size_is_resized():
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    out = torch.empty(0, device="accinte")
    torch.add(a.to("accinte"), b.to("accinte"), out=out)
    assert out.shape == (4, 5)
    torch.testing.assert_close(out.cpu(), a + b)


def test_a_held_stream_tells_a_call_that_waited():
    # hold_stream() (held_stream.py), which the asynchrony tests rely on, can
    # fail: a wait for the held stream gets through at the timeout, and says so.
    # The timeout leaves the calls before the wait seconds of margin on a loaded machine.
    with hold_stream(timeout=5) as hold:
        x = torch.ones(4, device="accinte") * 2
        assert hold.held() and not hold.stream.query()
        assert x.sum().item() == 8  # waits for the stream
        assert not hold.held()


def test_growing_an_empty_tensor_is_queued():
    # A CPU kernel that resizes an empty output (torch.arange's does), and
    # Tensor.resize_ from empty, grow the storage: the grown part is
    # zero-filled on the stream, not by a synchronous memset that would wait
    # for the device (Note [accinte storage growth]).
    torch.arange(11, device="accinte")  # the first call of the signature
    with hold_stream() as hold:
        r = torch.arange(11, device="accinte")
        junk = torch.full((1 << 12,), 7.0, device="accinte")
        del junk  # its block goes back to the cache, 7s and all (in stream order)
        g = torch.empty(0, device="accinte")
        g.resize_(1 << 12)
        g[:3] = 1.0
        assert hold.held()
    assert torch.equal(r.cpu(), torch.arange(11))
    assert g.sum().item() == 3  # the rest is the fill's zeros, never junk's 7s


@pytest.mark.parametrize("grow", ["storage", "tensor"])
def test_growing_a_storage_that_holds_data_is_queued(grow):
    # The kept bytes are copied on the stream (acMemcpyAsync), not by a
    # synchronous acMemcpy that waits for the whole device; the grown tail is
    # zero-filled after them (Note [accinte storage growth]).
    x = torch.arange(1.0, 1025.0, device="accinte")
    torch.accinte.synchronize()
    with hold_stream() as hold:
        x.mul_(2)  # queued: the copy must see it
        if grow == "storage":
            x.untyped_storage().resize_(4096 * 4)
            x.set_(x.untyped_storage(), 0, (4096,))
        else:
            x.resize_(4096)
        assert hold.held(), "growing a storage waited for the device"
    expected = torch.cat([torch.arange(1.0, 1025.0) * 2, torch.zeros(3072)])
    assert torch.equal(x.cpu(), expected)


def test_old_block_of_a_grown_storage_waits_for_the_copy():
    # The block a storage leaves is read by a copy queued on the current
    # stream. A block of another stream goes back to that stream's pool only
    # once the copy has run: a tensor allocated there meanwhile gets other
    # memory, and writing it cannot change the bytes being kept.
    side = torch.accinte.Stream()
    with torch.accinte.stream(side):
        x = torch.arange(1.0, 1025.0, device="accinte")
    torch.accinte.synchronize()
    with hold_stream() as hold:
        x.untyped_storage().resize_(2048 * 4)
        with torch.accinte.stream(side):
            y = torch.full((1024,), 7.0, device="accinte")  # the old block's size
            side.synchronize()  # the fill has run; the copy has not
        assert hold.held()
    x.set_(x.untyped_storage(), 0, (2048,))
    expected = torch.cat([torch.arange(1.0, 1025.0), torch.zeros(1024)])
    assert torch.equal(x.cpu(), expected)
    assert torch.equal(y.cpu(), torch.full((1024,), 7.0))


def test_item_waits_for_its_stream_only():
    # As on CUDA, .item() waits for the current stream, not for the device:
    # another stream held busy does not hold it up.
    x = torch.arange(4.0, device="accinte")
    torch.accinte.synchronize()
    side = torch.accinte.Stream()
    with hold_stream() as hold:
        with torch.accinte.stream(side):
            assert (x * 2).sum().item() == 12
        assert hold.held(), ".item() waited for another stream"


def test_views_returned_by_kernels_share_memory():
    x = torch.arange(12.0, device="accinte")
    u = x.unfold(0, 4, 2)  # a view computed by a CPU kernel
    x[2] = 100
    assert u[1, 0].item() == 100
    r = torch.view_as_real(torch.zeros(3, dtype=torch.complex64, device="accinte"))
    r[0, 1] = 5
    assert r.shape == (3, 2) and r[0, 1].item() == 5


def test_strict_mode_keeps_kernels_working(run_python):
    out = run_python(
        """
        import torch
        a = torch.randn(64, 64)
        d = a.to("accinte")
        r = ((d @ d).relu() + d.sum(0)).softmax(-1)
        e = ((a @ a).relu() + a.sum(0)).softmax(-1)
        print(torch.allclose(r.cpu(), e, atol=1e-5), torch.nonzero(d > 0).shape == torch.nonzero(a > 0).shape)
        """,
        env={"ACCINTE_STRICT": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]



# The fallback reuses the CPU alias an earlier launch made for a tensor
# (Note [accinte alias reuse]); each case changes one thing the alias must
# follow, with the device tensor's storage kept.
def test_reused_aliases_follow_the_offset():
    base = torch.zeros(8, device="accinte")
    first, second = base[:4], base[4:]  # one storage, same sizes and strides
    for _ in range(3):
        first.add_(1)
        torch.accinte.synchronize()
        second.add_(2)
        torch.accinte.synchronize()
    assert base.tolist() == [3.0] * 4 + [6.0] * 4


def test_reused_aliases_follow_the_dtype():
    x = torch.zeros(4, device="accinte")
    for _ in range(3):
        x.add_(1)
        torch.accinte.synchronize()
        x.view(torch.int32).add_(1)
        torch.accinte.synchronize()
    expected = torch.zeros(4)
    for _ in range(3):
        expected.add_(1)
        expected.view(torch.int32).add_(1)
    torch.testing.assert_close(x.cpu(), expected, rtol=0, atol=0)


def test_reused_aliases_follow_a_moved_storage():
    x = torch.zeros(4, device="accinte")
    x.add_(1)
    torch.accinte.synchronize()
    # Grows the storage: its bytes move to a new block, the tensor stays.
    x.untyped_storage().resize_(1 << 20)
    x.add_(1)
    assert x.tolist() == [2.0] * 4


def test_reused_scalars_follow_the_value():
    # The `1` of x.add_(1) reaches the fallback as a 0-dim CPU tensor, which
    # the fallback may pass again for an equal scalar of a later call.
    x = torch.zeros(4, device="accinte")
    for step in range(1, 7):
        x.add_(step % 3)
        torch.accinte.synchronize()
        x.mul_(2.5 if step % 2 else 2)
        torch.accinte.synchronize()
    expected = torch.zeros(4)
    for step in range(1, 7):
        expected.add_(step % 3)
        expected.mul_(2.5 if step % 2 else 2)
    torch.testing.assert_close(x.cpu(), expected, rtol=0, atol=0)
