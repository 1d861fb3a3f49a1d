"""The asynchronous engine never lies: every call of an operator on accinte
behaves as the CPU's, the first, second and hundredth alike (see Note
[accinte fallback] in csrc/emulation/fallback/Fallback.cpp).

Errors the CPU raises for a call's arguments are raised at the call, with the
CPU's type and message; later synchronisations raise nothing. `out=` tensors
are checked and resized as the CPU checks and resizes them, warnings reach the
caller once per call, deterministic-algorithm alerts are raised at the call.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.nn.functional as F

from held_stream import hold_stream

DEVICE = "accinte"


def calls(fn, n=3):
    """`fn` run `n` times, each result brought to the CPU."""
    return [fn().cpu() for _ in range(n)]


def assert_same_bits(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.equal(got.view(-1).view(torch.uint8) if got.dim() else got.reshape(1).view(torch.uint8),
                       expected.view(-1).view(torch.uint8) if expected.dim() else expected.reshape(1).view(torch.uint8))


def raises_at_the_call(fn, error, match):
    """`fn` raises `error` at the call, every time; nothing is left for the next synchronisation."""
    for _ in range(3):
        with pytest.raises(error, match=match):
            fn()
    torch.accinte.synchronize()


# Wrong values, no error: the first call right, later ones wrong.

@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
def test_binary_cross_entropy_is_the_cpus_at_every_call(reduction):
    torch.manual_seed(0)
    i, t = torch.rand(15, 10), torch.rand(15, 10)
    expected = F.binary_cross_entropy(i, t, reduction=reduction)
    di, dt = i.to(DEVICE), t.to(DEVICE)
    for got in calls(lambda: F.binary_cross_entropy(di, dt, reduction=reduction), 4):
        assert_same_bits(got, expected)


def test_batch_norm_on_a_permuted_input_is_the_cpus_at_every_call():
    torch.manual_seed(0)
    x = torch.randn(5, 4, 3).permute(2, 1, 0)
    expected = F.batch_norm(x, None, None, training=True)
    dx = x.to(DEVICE)
    for got in calls(lambda: F.batch_norm(dx, None, None, training=True), 4):
        assert got.stride() == expected.stride()
        assert_same_bits(got.contiguous(), expected.contiguous())


def test_fresh_outputs_take_the_cpus_layout():
    x = torch.randn(4, 5, 6).permute(2, 0, 1)
    for fn in (lambda t: t * 2, lambda t: t.sum(0), lambda t: torch.sigmoid(t)):
        expected = fn(x)
        for got in calls(lambda: fn(x.to(DEVICE))):
            assert got.stride() == expected.stride()
            assert torch.equal(got, expected)


# Errors at the call.

def test_integer_power_with_negative_exponent_raises_at_the_call():
    b = torch.tensor([2, 3], dtype=torch.int32, device=DEVICE)
    raises_at_the_call(lambda: torch.pow(b, -1, out=torch.empty_like(b)), RuntimeError,
                       "Integers to negative integer powers are not allowed")
    raises_at_the_call(lambda: torch.pow(b, -1), RuntimeError, "Integers to negative")


def test_out_of_another_dtype_raises_at_the_call():
    b = torch.tensor([2, 3], dtype=torch.int32, device=DEVICE)
    raises_at_the_call(lambda: torch.add(b.short(), b, out=torch.empty_like(b, dtype=torch.bool)),
                       RuntimeError, "result type Int can't be cast to the desired output type Bool")


def test_errors_after_a_successful_call_of_the_same_shapes_are_still_raised_at_the_call():
    a = torch.ones(2, 3, device=DEVICE)
    torch.add(a, a, out=torch.empty(2, 3, device=DEVICE))  # this signature is recorded as valid
    raises_at_the_call(lambda: torch.add(a, a, out=torch.empty(2, 3, device=DEVICE,
                                                                dtype=torch.int32)),
                       RuntimeError, "can't be cast")


@pytest.mark.parametrize("call", [
    lambda d: torch.abs(torch.ones(3, dtype=torch.bool, device=d)),
    lambda d: torch.ones(2, 2, dtype=torch.bool, device=d) @ torch.ones(2, 2, dtype=torch.bool, device=d),
    lambda d: torch.ones(3, dtype=torch.complex32, device=d).sum(),
    # accinte's own kernels: the CPU's dtypes, the CPU's message.
    lambda d: F.conv2d(torch.ones(1, 1, 3, 3, dtype=torch.bool, device=d),
                       torch.ones(1, 1, 2, 2, dtype=torch.bool, device=d)),
    lambda d: F.conv_transpose2d(torch.ones(1, 1, 3, 3, dtype=torch.int32, device=d),
                                 torch.ones(1, 1, 2, 2, dtype=torch.int32, device=d)),
    lambda d: torch.ones(3, dtype=torch.uint16, device=d).square(),
    lambda d: torch.ones(3, dtype=torch.float8_e4m3fn, device=d).square(),
    lambda d: torch.ones(3, dtype=torch.int64, device=d).frac(),
], ids=["abs-bool", "matmul-bool", "sum-complex32", "conv2d-bool", "conv_transpose2d-int32",
        "square-uint16", "square-float8", "frac-int64"])
def test_dtype_refusals_raise_not_implemented_at_the_call(call):
    with pytest.raises(NotImplementedError) as cpu:
        call("cpu")
    message = str(cpu.value).replace("abs_cpu", "abs_accinte")  # accinte's own abs names itself
    raises_at_the_call(lambda: call(DEVICE), NotImplementedError, f"^{re.escape(message)}$")


def test_convolution_dtype_refusals_after_a_queued_convolution():
    # A float convolution of the same shapes ran and is queued from then on;
    # an integer one must still be refused at the call.
    x, w = torch.ones(1, 1, 3, 3, device=DEVICE), torch.ones(1, 1, 2, 2, device=DEVICE)
    for _ in range(2):
        F.conv_transpose2d(x, w)
    raises_at_the_call(lambda: F.conv_transpose2d(x.int(), w.int()), NotImplementedError,
                       "slow_conv_transpose2d_out_cpu\" not implemented for 'Int'")
    assert torch.equal(F.conv_transpose2d(x, w).cpu(), F.conv_transpose2d(x.cpu(), w.cpu()))


def test_convolutions_of_a_signature_that_ran_are_queued():
    # The first call of a dtype and backend waited for its kernel; later calls
    # of that signature, whatever their sizes, are queued behind a held stream.
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    dx, dw = x.to(DEVICE), w.to(DEVICE)
    F.conv2d(dx, dw)
    with hold_stream() as hold:
        same = F.conv2d(dx, dw)
        wider = F.conv2d(torch.cat([dx, dx], dim=3), dw)
        assert hold.held(), "a convolution of a signature that ran waited for the device"
    assert_same_bits(same.cpu(), F.conv2d(x, w))
    assert_same_bits(wider.cpu(), F.conv2d(torch.cat([x, x], dim=3), w))


def test_partial_overlap_of_input_and_output_raises_like_the_cpu():
    for device in ("cpu", DEVICE):
        x = torch.arange(6.0, device=device)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.add(x[:-1], 1, out=x[1:])
        with pytest.raises(RuntimeError, match="unsupported operation"):
            x[1:].copy_(x[:-1])
        with pytest.raises(RuntimeError, match="unsupported operation"):
            x[:3].expand(2, 3).copy_(torch.ones(2, 3, device=device))
    torch.accinte.synchronize()
    x = torch.arange(6.0, device=DEVICE)
    torch.add(x, 1, out=x)  # full overlap is allowed, as on the CPU
    assert x.cpu().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_host_0dim_tensor_is_refused_as_out():
    a = torch.ones(3, device=DEVICE)
    out = torch.tensor(0.0)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.sum(a, 0, out=out)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.add(a, 1, out=torch.tensor(0.0))
    assert a.add(torch.tensor(2.0)).cpu().tolist() == [3.0] * 3  # 0-dim host inputs still work


def test_data_dependent_errors_surface_later_naming_the_operator():
    x = torch.arange(4.0, device=DEVICE)
    good = torch.tensor([0, 1], device=DEVICE)
    torch.gather(x, 0, good)  # the signature's first call
    torch.gather(x, 0, torch.tensor([0, 9], device=DEVICE))  # queued: the bad index is data
    with pytest.raises(RuntimeError, match="aten::gather"):
        torch.accinte.synchronize()
    assert torch.gather(x, 0, good).cpu().tolist() == [0.0, 1.0]  # the device keeps working


# out= semantics.

def test_an_empty_out_takes_the_layout_the_cpu_gives_it():
    x = torch.randn(3, 4, 5).permute(2, 0, 1)
    cpu_out = torch.empty(0)
    torch.sum(x, 0, out=cpu_out)
    for _ in range(3):
        out = torch.empty(0, device=DEVICE)
        torch.sum(x.to(DEVICE), 0, out=out)
        assert out.shape == cpu_out.shape and out.stride() == cpu_out.stride()
        assert torch.equal(out.cpu(), cpu_out)


def test_a_wrongly_shaped_out_is_resized_with_the_cpus_warning_once_per_call():
    def run(device):
        x = torch.ones(3, 4, device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = []
            for _ in range(3):
                out = torch.empty(7, device=device)
                torch.sum(x, 0, out=out)
                results.append(out.cpu())
        return results, [str(w.message) for w in caught]

    expected, cpu_warnings = run("cpu")
    got, device_warnings = run(DEVICE)
    assert len(cpu_warnings) == 3 and device_warnings == cpu_warnings
    for g, e in zip(got, expected):
        assert g.shape == e.shape and torch.equal(g, e)


def test_functional_calls_do_not_take_warnings_of_the_out_overload():
    # mse_loss.out warns when handed a 0-dim output; the functional mse_loss
    # (which PyTorch's default for other devices builds on mse_loss.out)
    # must not, as on the CPU.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the functional call warns on neither
        F.mse_loss(torch.rand(3, 4, device=DEVICE), torch.rand(3, 4, device=DEVICE))
    torch.accinte.synchronize()


def test_deterministic_algorithm_alerts_at_the_call():
    x = torch.zeros(3, device=DEVICE)
    index, source = torch.tensor([0, 0], device=DEVICE), torch.tensor([1.0, 2.0], device=DEVICE)
    x.put_(index, source)  # allowed before the switch: the same signature
    torch.accinte.synchronize()
    try:
        torch.use_deterministic_algorithms(True)
        raises_at_the_call(lambda: x.put_(index, source), RuntimeError,
                           "does not have a deterministic implementation")
        torch.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
            x.put_(index, source)
    finally:
        torch.use_deterministic_algorithms(False)
    torch.accinte.synchronize()


# The first call of a signature does not wait for the device.

def test_the_first_call_of_a_signature_is_queued():
    a = torch.randn(37, 41, device=DEVICE)  # shapes no other test uses
    with hold_stream() as hold:
        b = torch.tanh(a) * 3 + a
        assert hold.held()
    torch.testing.assert_close(b.cpu(), torch.tanh(a.cpu()) * 3 + a.cpu(), rtol=0, atol=0)
