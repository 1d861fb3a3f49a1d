"""Operators whose composite default would shadow the CPU's own kernel run the
CPU's kernel on accinte (Note [accinte shadowed composites]).

The operators are listed from the dispatcher, the way the registration finds
them: a CPU kernel plus a CompositeExplicitAutograd or CompositeImplicitAutograd
default. Each needs a sample below; a new PyTorch that adds one fails
`test_every_shadowed_composite_has_a_sample` until it gets one. Every sample
must give the CPU's bits.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

aten = torch.ops.aten
C = torch._C

REGISTRATION = "AccInteShadowedComposites.cpp"


def shadowed_composites() -> set[str]:
    """Operators with a CPU kernel and a composite default, from the dispatcher
    (accinte's own kernels for them included: they are what is checked)."""
    names = set()
    for name in C._dispatch_get_all_op_names():
        has = lambda key: C._dispatch_has_kernel_for_dispatch_key(name, key)  # noqa: E731
        if has("CPU") and (has("CompositeExplicitAutograd") or has("CompositeImplicitAutograd")):
            names.add(name)
    return names


def privateuse1_kernel(name: str) -> str:
    table = C._dispatch_dump_table(name).splitlines()
    return next(line for line in table if line.startswith("PrivateUse1:"))


def _gen(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def _out_like(result):
    return torch.empty_like(result)


# name -> a function of a device returning the operator's result there.
SAMPLES = {
    "aten::_stack": lambda d: aten._stack([_gen(3, 4).to(d), _gen(3, 4, seed=1).to(d)], 1),
    "aten::_stack.out": lambda d: aten._stack.out(
        [_gen(3, 4).to(d), _gen(3, 4, seed=1).to(d)], 1, out=torch.empty(3, 2, 4, device=d)),
    "aten::addr": lambda d: aten.addr(_gen(5, 7).to(d), _gen(5, seed=1).to(d),
                                      _gen(7, seed=2).to(d), beta=0.5, alpha=3.0),
    "aten::addr.out": lambda d: aten.addr.out(
        _gen(5, 7).to(d), _gen(5, seed=1).to(d), _gen(7, seed=2).to(d), beta=0.5, alpha=3.0,
        out=torch.empty(5, 7, device=d)),
    "aten::all.dims": lambda d: aten.all.dims(_gen(4, 5, 6).gt(-1.5).to(d), [0, 2]),
    "aten::all.dims_out": lambda d: aten.all.dims_out(
        _gen(4, 5, 6).gt(-1.5).to(d), [0, 2], True, out=torch.empty(0, dtype=torch.bool, device=d)),
    "aten::any.dims": lambda d: aten.any.dims(_gen(4, 5, 6).gt(1.5).to(d), [1]),
    "aten::any.dims_out": lambda d: aten.any.dims_out(
        _gen(4, 5, 6).gt(1.5).to(d), [0, 1], out=torch.empty(0, dtype=torch.bool, device=d)),
    "aten::linalg__powsum": lambda d: aten.linalg__powsum(_gen(6, 33).to(d), 3, [1]),
    "aten::mish_backward": lambda d: aten.mish_backward(_gen(4, 33).to(d), _gen(4, 33, seed=1).to(d)),
    "aten::native_channel_shuffle": lambda d: aten.native_channel_shuffle(_gen(2, 6, 3, 3).to(d), 3),
    "aten::native_group_norm": lambda d: aten.native_group_norm(
        _gen(2, 6, 5, 5).to(d), _gen(6, seed=1).to(d), _gen(6, seed=2).to(d), 2, 6, 25, 3, 1e-5),
    "aten::native_layer_norm": lambda d: aten.native_layer_norm(
        _gen(4, 7, 33).to(d), [33], _gen(33, seed=1).to(d), _gen(33, seed=2).to(d), 1e-5),
    "aten::silu_backward": lambda d: aten.silu_backward(_gen(4, 33).to(d), _gen(4, 33, seed=1).to(d)),
}


def assert_same_bits(got, expected):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same_bits(g, e)
        return
    assert got.device.type == "accinte"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    bits = lambda t: t.reshape(-1).view(torch.uint8) if t.dtype.is_floating_point else t  # noqa: E731
    assert torch.equal(bits(got), bits(expected)), (
        f"max difference {(got.double() - expected.double()).abs().max()}")


def test_every_shadowed_composite_has_a_sample():
    listed = shadowed_composites()
    assert listed, "the dispatcher query found nothing"
    missing = sorted(listed - set(SAMPLES))
    assert not missing, f"PyTorch added composite defaults that shadow CPU kernels: {missing}; " \
                        "add a sample for each to SAMPLES"
    assert not sorted(set(SAMPLES) - listed), "SAMPLES lists operators that are no longer shadowed"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_routed_to_the_cpu_kernel(name):
    assert REGISTRATION in privateuse1_kernel(name)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_gives_the_cpu_bits(name):
    assert_same_bits(SAMPLES[name]("accinte"), SAMPLES[name]("cpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_bits_and_gradients(dtype):
    x = _gen(3, 5, 64, dtype=dtype)
    ln = torch.nn.LayerNorm(64).to(dtype)
    with torch.no_grad():
        ln.weight.copy_(_gen(64, dtype=dtype, seed=1))
    ln_d = torch.nn.LayerNorm(64).to(dtype).to("accinte")
    ln_d.load_state_dict(ln.state_dict())
    xc, xd = x.clone().requires_grad_(), x.to("accinte").requires_grad_()
    yc, yd = ln(xc), ln_d(xd)
    assert_same_bits(yd, yc)
    yc.pow(2).sum().backward()
    yd.pow(2).sum().backward()
    assert_same_bits(xd.grad, xc.grad)
    assert_same_bits(ln_d.weight.grad, ln.weight.grad)


def test_group_norm_on_channels_last_input():
    x = _gen(2, 8, 6, 6).to(memory_format=torch.channels_last)
    gn = torch.nn.GroupNorm(4, 8)
    with torch.no_grad():
        gn.weight.copy_(_gen(8, seed=1))
        gn.bias.copy_(_gen(8, seed=2))
    gn_d = torch.nn.GroupNorm(4, 8).to("accinte")
    gn_d.load_state_dict(gn.state_dict())
    xc, xd = x.clone().requires_grad_(), x.to("accinte").requires_grad_()
    yc, yd = gn(xc), gn_d(xd)
    assert_same_bits(yd, yc)
    assert yd.is_contiguous(memory_format=torch.channels_last) == yc.is_contiguous(
        memory_format=torch.channels_last)
    yc.pow(2).sum().backward()
    yd.pow(2).sum().backward()
    # PyTorch's formula keeps the input's memory format for the backward kernel
    # on the CPU only; accinte's autograd kernel does what the CPU does (Note
    # [accinte group_norm gradients in the CPU's memory format]).
    assert_same_bits(xd.grad, xc.grad)
    assert_same_bits(gn_d.weight.grad, gn.weight.grad)
    assert_same_bits(gn_d.bias.grad, gn.bias.grad)


@pytest.mark.parametrize("loss", ["linear", "square"])
def test_group_norm_on_channels_last_input_double_backward(loss):
    x = _gen(2, 4, 3, 3).to(memory_format=torch.channels_last)
    w = _gen(4, seed=1)
    c = _gen(2, 4, 3, 3, seed=2)
    grads = []
    for device in ("cpu", "accinte"):
        xx, ww = x.to(device).requires_grad_(), w.to(device).requires_grad_()
        y = F.group_norm(xx, 2, ww)
        first = (y * c.to(device)).sum() if loss == "linear" else y.pow(2).sum()
        gx, gw = torch.autograd.grad(first, (xx, ww), create_graph=True)
        (ggx,) = torch.autograd.grad(gx.pow(2).sum() + gw.sum(), xx)
        grads.append((gx, gw, ggx))
    # The first-order gradients, taken with a graph, are the CPU's bits, and
    # so is the second-order one, also when the output's gradient depends on
    # the output ("square"): the second backward then brings the gradients of
    # the output, mean and rstd to one node, as on the CPU (Note [accinte
    # group_norm gradients in the CPU's memory format]).
    assert_same_bits(grads[1], grads[0])


def test_silu_double_backward_matches_cpu():
    # silu_backward's CompositeImplicitAutograd default used to fill the
    # autograd key: a double backward decomposed it.
    x = _gen(4, 33)
    grads = []
    for device in ("cpu", "accinte"):
        xx = x.to(device).requires_grad_()
        (g,) = torch.autograd.grad(F.silu(xx).sum(), xx, create_graph=True)
        (gg,) = torch.autograd.grad(g.pow(2).sum(), xx)
        grads.append(gg)
    assert_same_bits(grads[1], grads[0])
