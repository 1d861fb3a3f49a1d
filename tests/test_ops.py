"""Operators: the minimal set and the global fallback give the CPU's answers."""

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64,
          torch.int64, torch.int32, torch.uint8, torch.bool]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0, 100, shape, generator=g).to(dtype)


# ---- the minimal operator set ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    x = make((5, 7), dtype)
    d = x.to("accinte")
    assert d.device.type == "accinte" and d.dtype == dtype
    assert torch.equal(d.cpu(), x)


def test_empty_and_empty_strided():
    e = torch.empty(3, 4, device="accinte")
    assert e.shape == (3, 4) and e.is_contiguous()
    cl = torch.empty(2, 3, 4, 5, device="accinte", memory_format=torch.channels_last)
    assert cl.is_contiguous(memory_format=torch.channels_last)
    s = torch.empty_strided((2, 3), (1, 2), device="accinte:1")
    assert s.stride() == (1, 2) and s.device.index == 1
    with pytest.raises(RuntimeError, match="pinned"):
        torch.empty(2, device="accinte", pin_memory=True)


def test_views_share_storage():
    x = torch.arange(12.0, device="accinte")
    v = x.view(3, 4)
    t = v.t()
    s = x.as_strided((2, 2), (1, 3), 1)
    r = t.reshape(12)  # non-viewable: copies
    v[0, 0] = 100
    assert x[0].item() == 100 and t[0, 0].item() == 100
    assert s.cpu().tolist() == [[1, 4], [2, 5]]
    assert torch.equal(r.cpu(), torch.arange(12.0).view(3, 4).t().reshape(12))
    assert x.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()


def test_resize_and_set():
    x = torch.arange(6.0, device="accinte")
    x.resize_(2, 3)
    assert x.shape == (2, 3) and x.cpu().flatten().tolist() == [0, 1, 2, 3, 4, 5]
    x.resize_(4, 4)
    assert x.shape == (4, 4) and x.cpu().flatten()[:6].tolist() == [0, 1, 2, 3, 4, 5]
    y = torch.empty(0, device="accinte")
    y.set_(x)
    assert y.shape == x.shape and y.data_ptr() == x.data_ptr()
    z = torch.empty(0, device="accinte")
    z.set_(x.untyped_storage(), 2, (2,), (1,))
    assert z.cpu().tolist() == [2, 3]
    w = torch.empty(0, device="accinte")
    w.set_(x.untyped_storage())
    assert w.numel() == x.untyped_storage().nbytes() // 4


def test_local_scalar_dense_and_printing():
    assert torch.tensor(3.5, device="accinte").item() == 3.5
    assert torch.tensor(7, device="accinte").item() == 7
    assert torch.tensor(True, device="accinte").item() is True
    assert torch.tensor(1 + 2j, device="accinte").item() == 1 + 2j
    text = repr(torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="accinte"))
    assert "device='accinte:0'" in text and "4." in text


@pytest.mark.parametrize("src_dtype,dst_dtype", [
    (torch.float32, torch.float64), (torch.int64, torch.float16), (torch.float32, torch.bool),
    (torch.bfloat16, torch.complex64),
])
def test_copy_converts_dtypes(src_dtype, dst_dtype):
    x = make((4, 5), src_dtype)
    for src in (x, x.to("accinte")):
        dst = torch.empty(4, 5, dtype=dst_dtype, device="accinte")
        dst.copy_(src)
        assert torch.equal(dst.cpu(), x.to(dst_dtype))
    back = torch.empty(4, 5, dtype=dst_dtype)
    back.copy_(x.to("accinte"))
    assert torch.equal(back, x.to(dst_dtype))


def test_copy_non_contiguous_and_broadcast():
    x = torch.randn(6, 8)
    d = x.to("accinte")
    assert torch.equal(d.t().contiguous().cpu(), x.t().contiguous())
    assert torch.equal(d[::2, 1::3].cpu(), x[::2, 1::3])
    dst = torch.zeros(6, 8, device="accinte")
    dst[:, ::2] = torch.arange(4.0)  # broadcast host -> strided device
    expected = torch.zeros(6, 8)
    expected[:, ::2] = torch.arange(4.0)
    assert torch.equal(dst.cpu(), expected)
    host = torch.empty(8, 6)
    host.copy_(d.t())
    assert torch.equal(host, x.t())


def test_copy_conjugate_and_negative_views():
    x = torch.randn(5, dtype=torch.complex64)
    d = x.to("accinte")
    assert torch.equal(d.conj().cpu(), x.conj())
    assert torch.equal(d.conj().resolve_conj().cpu(), x.conj().resolve_conj())
    dst = torch.empty(5, dtype=torch.complex64, device="accinte")
    dst.copy_(d.conj())
    assert torch.equal(dst.cpu(), x.conj())


def test_copy_across_devices():
    x = torch.randn(100)
    a = x.to("accinte:0")
    b = a.to("accinte:1")
    assert b.device.index == 1 and torch.equal(b.cpu(), x)
    c = torch.empty(10, 10, device="accinte:0")
    c.copy_(b.view(10, 10).t())
    assert torch.equal(c.cpu(), x.view(10, 10).t())


def test_non_blocking_copies_with_pinned_memory():
    x = torch.randn(1000).pin_memory()
    d = x.to("accinte", non_blocking=True)
    out = torch.empty(1000).pin_memory()
    out.copy_(d, non_blocking=True)
    torch.accinte.synchronize()
    assert torch.equal(out, x)
    host = d.to("cpu", non_blocking=True)
    torch.accinte.synchronize()
    assert torch.equal(host, x)


# ---- everything else goes through the fallback ------------------------------------


@pytest.mark.parametrize("name,fn", [
    ("add", lambda a, b: a + b),
    ("mul_scalar", lambda a, b: a * 3),
    ("matmul", lambda a, b: a @ b.t()),
    ("sum_dim", lambda a, b: a.sum(dim=1)),
    ("softmax", lambda a, b: torch.softmax(a, dim=-1)),
    ("where", lambda a, b: torch.where(a > 0, a, b)),
    ("cat", lambda a, b: torch.cat([a, b], dim=0)),
    ("index", lambda a, b: a[torch.tensor([0, 2], device=a.device)]),
    ("nonzero", lambda a, b: torch.nonzero(a > 0)),
    ("masked_select", lambda a, b: a[a > 0]),
    ("sort", lambda a, b: torch.sort(a, dim=1).values),
    ("topk", lambda a, b: torch.topk(a, 2).indices),
    ("cumsum", lambda a, b: torch.cumsum(a, 0)),
    ("inplace_add", lambda a, b: a.clone().add_(b)),
    ("out_variant", lambda a, b: torch.add(a, b, out=torch.empty(0, device=a.device))),
    ("conv2d", lambda a, b: torch.nn.functional.conv2d(a.view(1, 1, 4, 6), b.view(1, 1, 4, 6)[..., :3, :3])),
    ("linalg_inv", lambda a, b: torch.linalg.inv(a[:, :4] @ a[:, :4].t() + 4 * torch.eye(4, device=a.device))),
])
def test_fallback_matches_cpu(name, fn):
    a, b = make((4, 6), torch.float32, 1), make((4, 6), torch.float32, 2)
    expected = fn(a, b)
    got = fn(a.to("accinte"), b.to("accinte"))
    assert got.device.type == "accinte"
    torch.testing.assert_close(got.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("adjoint", [False, True])
def test_out_kernel_that_flips_its_outputs_conj_bit(dtype, adjoint):
    # linalg_lu_solve(left=False) solves the conjugate-transposed system and
    # then sets the conj bit of its output in place: the device tensor must
    # end up holding the value, not the conjugate (CpuAlias.cpp, settle).
    torch.manual_seed(0)
    lu, pivots = torch.linalg.lu_factor(torch.randn(3, 3, dtype=dtype))
    b = torch.randn(4, 3, dtype=dtype)
    expected = torch.linalg.lu_solve(lu, pivots, b, left=False, adjoint=adjoint)
    args = (lu.to("accinte"), pivots.to("accinte"), b.to("accinte"))
    for _ in range(2):  # the first call of a signature is checked on stand-ins, later ones reuse the record
        got = torch.linalg.lu_solve(*args, left=False, adjoint=adjoint)
        torch.testing.assert_close(got.cpu(), expected)
    out = torch.empty(4, 3, dtype=dtype, device="accinte")
    torch.linalg.lu_solve(*args, left=False, adjoint=adjoint, out=out)
    torch.testing.assert_close(out.cpu(), expected)


def test_fallback_keeps_device_index():
    a = torch.ones(3, device="accinte:1")
    assert (a * 2).device == torch.device("accinte:1")
    assert torch.arange(4, device="accinte:1").device == torch.device("accinte:1")


def test_autograd_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    x = torch.randn(32, 8)
    cpu_loss = model(x).pow(2).mean()
    cpu_loss.backward()
    cpu_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    dev = model.to("accinte")
    loss = dev(x.to("accinte")).pow(2).mean()
    loss.backward()
    torch.testing.assert_close(loss.cpu(), cpu_loss.detach())
    for p, g in zip(dev.parameters(), cpu_grads):
        assert p.grad.device.type == "accinte"
        torch.testing.assert_close(p.grad.cpu(), g)


def test_tensors_on_different_devices_are_refused():
    a, b = torch.ones(2, device="accinte:0"), torch.ones(2, device="accinte:1")
    with pytest.raises(RuntimeError, match="same device"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        a + torch.ones(2)  # a CPU tensor that is not a scalar
    assert (a + 1).sum().item() == 4  # the device keeps working


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_forward_and_backward_match_cpu(transposed):
    torch.manual_seed(0)
    conv = (torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d)(3, 4, 3, stride=2, padding=1)
    x = torch.randn(2, 3, 9, 9, requires_grad=True)
    conv(x).square().sum().backward()
    expected = [x.grad.clone()] + [p.grad.clone() for p in conv.parameters()]
    dconv = conv.to("accinte")
    dconv.zero_grad()
    dx = x.detach().to("accinte").requires_grad_()
    dconv(dx).square().sum().backward()
    got = [dx.grad] + [p.grad for p in dconv.parameters()]
    for g, e in zip(got, expected):
        assert g.device.type == "accinte"
        torch.testing.assert_close(g.cpu(), e, rtol=1e-4, atol=1e-4)


CONV_LAYOUTS = [(cl, wl) for cl in (False, True) for wl in (False, True)]


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])  # mkldnn's and slow kernels' rules
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_lays_out_outputs_and_gradients_as_the_cpu(dims, dtype, transposed):
    # channels_last in, channels_last out (or not) exactly where the CPU says.
    fmt = torch.channels_last if dims == 2 else torch.channels_last_3d
    args = ([1] * dims, [1] * dims, [1] * dims, transposed, [0] * dims, 1)
    for input_cl, weight_cl in CONV_LAYOUTS:
        x = torch.randn((2, 4) + (5,) * dims, dtype=dtype)
        w = torch.randn(((4, 6) if transposed else (6, 4)) + (3,) * dims, dtype=dtype)
        x = x.to(memory_format=fmt) if input_cl else x
        w = w.to(memory_format=fmt) if weight_cl else w
        results = []
        for device in ("cpu", "accinte"):
            dx, dw = x.to(device).requires_grad_(), w.to(device).requires_grad_()
            out = torch.convolution(dx, dw, None, *args)
            results.append([out, *torch.autograd.grad(out, (dx, dw), torch.ones_like(out))])
        for expected, got in zip(*results):
            assert got.stride() == expected.stride(), (input_cl, weight_cl)
            assert torch.equal(got.cpu(), expected)


def test_mode_with_out_matches_cpu():
    x = torch.tensor([[1.0, 2, 2, 5], [3, 3, 1, 1], [0, 7, 7, 7]])
    for kwargs in (dict(dim=1), dict(dim=0, keepdim=True)):
        expected = torch.mode(x, **kwargs)
        for _ in range(2):  # the first call of a signature and a queued one
            values = torch.empty(0, device="accinte")
            indices = torch.empty(0, dtype=torch.long, device="accinte")
            got = torch.mode(x.to("accinte"), **kwargs, out=(values, indices))
            assert got[0] is values and got[1] is indices
            assert torch.equal(values.cpu(), expected.values)
            assert torch.equal(indices.cpu(), expected.indices)
    with pytest.raises(RuntimeError, match="expected scalar type 'Long' but got 'Int'"):
        torch.mode(x.to("accinte"), 1, out=(torch.empty(0, device="accinte"),
                                             torch.empty(0, dtype=torch.int32, device="accinte")))
