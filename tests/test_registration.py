"""Every registration form (csrc/aten/README.md): each test fails without its form.

Forms that change which kernel runs without changing the answer are told apart
by the dispatch table (the file a kernel was registered from) and by call
counters their kernels keep (torch.ops.accinte._call_count, a test hook).
"""

import pytest
import torch
from torch.library import opcheck

from held_stream import hold_stream

DEVICE = "accinte"


def kernel_entry(op: str, key: str) -> str:
    """The dispatch table's line for `key`, e.g. 'PrivateUse1: registered at ...'."""
    for line in torch._C._dispatch_dump_table(op).splitlines():
        if line.startswith(f"{key}:"):
            return line
    return ""


def registered_in(op: str, key: str, source: str) -> bool:
    """True if `op`'s kernel for `key` was registered directly, from `source`."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(op, key) and source in kernel_entry(op, key)


def calls(name: str) -> int:
    return torch.ops.accinte._call_count(name)


def make(dtype, shape=(4, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=torch.complex128).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 200, shape, generator=g, dtype=dtype)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


# ---- 1. a native kernel: TORCH_LIBRARY_IMPL(aten, PrivateUse1) -----------------------


def test_native_kernel_is_registered_from_the_minimal_set():
    assert registered_in("aten::empty.memory_format", "PrivateUse1", "AccInteMinimal.cpp")
    x = torch.empty(2, 3, device=DEVICE)
    assert x.device.type == DEVICE and x.shape == (2, 3)


# ---- 2. a DispatchStub kernel: REGISTER_PRIVATEUSE1_DISPATCH(abs_stub) ----------------

ABS_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
              torch.bfloat16, torch.float32, torch.float64, torch.complex32, torch.complex64,
              torch.complex128, torch.float8_e4m3fn]


def test_abs_out_reaches_the_stub_through_the_device_generic_kernel():
    assert registered_in("aten::abs.out", "PrivateUse1", "AccInteDispatchStub.cpp")


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype", ABS_DTYPES, ids=str)
def test_abs_stub_matches_cpu_for_every_dtype(dtype):
    x = make(dtype)
    expected = torch.abs(x)
    before = calls("abs_stub")
    got = torch.abs(x.to(DEVICE))
    assert calls("abs_stub") == before + 1
    assert got.dtype == expected.dtype  # complex -> real
    assert torch.equal(got.cpu().view(torch.uint8), expected.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.bool], ids=str)
def test_abs_stub_refuses_unsupported_dtypes_at_the_call(dtype):
    # The CPU's dtypes: abs of bool raises NotImplementedError there too.
    with pytest.raises(NotImplementedError):
        torch.abs(torch.ones(3, dtype=dtype))
    x = torch.ones(3, dtype=dtype, device=DEVICE)
    with pytest.raises(NotImplementedError, match="abs_accinte"):
        torch.abs(x)


def test_abs_in_place_and_out_go_through_the_stub():
    x = torch.tensor([-1.5, 0.0, 2.0, -3.0])
    d = x.to(DEVICE)
    out = torch.empty(0, device=DEVICE)
    before = calls("abs_stub")
    torch.abs(d, out=out)
    d.abs_()
    assert calls("abs_stub") == before + 2
    assert torch.equal(out.cpu(), x.abs()) and torch.equal(d.cpu(), x.abs())


def test_abs_stub_on_strided_tensors():
    x = make(torch.float32, (6, 8))
    d = x.to(DEVICE)
    assert torch.equal(torch.abs(d.t()).cpu(), x.t().abs())
    d[:, ::2].abs_()
    expected = x.clone()
    expected[:, ::2].abs_()
    assert torch.equal(d.cpu(), expected)
    assert torch.equal(torch.ops.accinte.custom_abs(d.t()[::2]).cpu(), expected.t()[::2].abs())


def test_abs_stub_runs_on_the_stream():
    x = torch.full((1000,), -2.0, device=DEVICE)
    x.mul_(1.5).abs()  # the first call of each signature
    x.fill_(-2.0)
    with hold_stream() as hold:
        x.mul_(1.5)  # -3, once the stream gets there
        y = x.abs()
        assert hold.held() and not hold.stream.query()  # queued, nothing ran yet
    # In stream order, after the multiplication: the caller computing abs at
    # the call would have read -2.
    assert y.sum().item() == 3000


def test_abs_stub_keeps_autograd():
    x = torch.tensor([-1.0, 2.0, -3.0], requires_grad=True)
    d = x.detach().to(DEVICE).requires_grad_()
    d.abs().sum().backward()
    x.abs().sum().backward()
    assert torch.equal(d.grad.cpu(), x.grad)


# ---- 3. a custom operator: accinte::custom_abs ----------------------------------------


def test_custom_abs_has_a_kernel_per_key():
    for key in ("PrivateUse1", "Meta", "AutogradPrivateUse1"):
        assert registered_in("accinte::custom_abs", key, "AccInteCustomOps.cpp"), key


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.complex64], ids=str)
def test_custom_abs_matches_torch_abs(dtype):
    x = make(dtype)
    got = torch.ops.accinte.custom_abs(x.to(DEVICE))
    assert got.device.type == DEVICE
    assert got.dtype == torch.abs(x).dtype
    assert torch.equal(got.cpu(), torch.abs(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64], ids=str)
def test_custom_abs_gradient_matches_cpu(dtype):
    x = make(dtype)
    x[0, 0] = 0  # abs' subgradient at 0
    expected = x.clone().requires_grad_()
    torch.abs(expected).pow(2).sum().backward()
    d = x.to(DEVICE).requires_grad_()
    out = torch.ops.accinte.custom_abs(d)
    assert "CustomAbsFunction" in out.grad_fn.name()
    out.pow(2).sum().backward()
    torch.testing.assert_close(d.grad.cpu(), expected.grad)


def test_custom_abs_meta_kernel():
    m = torch.ops.accinte.custom_abs(torch.empty(3, 4, dtype=torch.complex128, device="meta"))
    assert m.device.type == "meta" and m.shape == (3, 4) and m.dtype == torch.float64


# LITERALINCLUDE START: AUTOGRAD OPCHECK
def test_custom_abs_passes_opcheck():
    samples = [
        (make(torch.float32).to(DEVICE),),
        (make(torch.float32).to(DEVICE).requires_grad_(),),
        (make(torch.complex64, (7,)).to(DEVICE),),
        (make(torch.int64, (2, 3, 4)).to(DEVICE),),
    ]
    for args in samples:
        # "test_autograd_registration" is left out: in torch 2.13 it raises
        # NotImplementedError for tensors on devices other than CPU, CUDA and
        # XPU, before looking at the registration. The AOT-dispatch test runs
        # the backward through the AutogradPrivateUse1 kernel instead.
        opcheck(torch.ops.accinte.custom_abs.default, args,
                test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
# LITERALINCLUDE END: AUTOGRAD OPCHECK


# ---- 4. a C++ autograd Function with an aliasing output -------------------------------


def test_aliasing_function_is_registered_per_layer():
    op = "accinte::custom_autograd_fn_aliasing"
    for key in ("PrivateUse1", "ADInplaceOrView", "AutogradPrivateUse1"):
        assert registered_in(op, key, "AccInteAutogradFunction.cpp"), key


def test_aliasing_function_returns_a_view():
    x = torch.arange(6.0, device=DEVICE).requires_grad_()
    y = torch.ops.accinte.custom_autograd_fn_aliasing(x)
    assert "AliasingFunction" in y.grad_fn.name()
    assert y._is_view() and y._base is x
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    with torch.no_grad():
        y[0] = 100  # writes through to the input
    assert x[0].item() == 100 and x._version == y._version
    # With grad recorded, an in-place write would bypass the custom backward.
    with pytest.raises(RuntimeError, match="custom Function"):
        y.mul_(2)


def test_aliasing_function_gradient_flows():
    x = torch.arange(6.0, device=DEVICE).requires_grad_()
    y = torch.ops.accinte.custom_autograd_fn_aliasing(x)
    (y * torch.arange(6.0, device=DEVICE)).sum().backward()
    assert torch.equal(x.grad.cpu(), torch.arange(6.0))


def test_aliasing_function_without_autograd():
    x = torch.arange(4.0, device=DEVICE)
    with torch.inference_mode():
        y = torch.ops.accinte.custom_autograd_fn_aliasing(x)
        y.add_(1)
    assert torch.equal(x.cpu(), torch.arange(4.0) + 1)


# ---- 5. a per-operator fallback: sub.Tensor -------------------------------------------


def test_sub_is_routed_to_the_fallback_by_name():
    assert registered_in("aten::sub.Tensor", "PrivateUse1", "AccInteOpFallback.cpp")
    a, b = make(torch.float32), make(torch.float32, seed=1)
    before = calls("sub.Tensor fallback")
    got = torch.sub(a.to(DEVICE), b.to(DEVICE), alpha=2)
    assert calls("sub.Tensor fallback") == before + 1
    assert torch.equal(got.cpu(), torch.sub(a, b, alpha=2))
    assert torch.equal((a.to(DEVICE) - 1).cpu(), a - 1)  # Scalar other: wrapped number


def test_sub_keeps_autograd():
    a = make(torch.float32).requires_grad_()
    d = a.detach().to(DEVICE).requires_grad_()
    (d - 3 * d.detach()).pow(2).sum().backward()
    (a - 3 * a.detach()).pow(2).sum().backward()
    torch.testing.assert_close(d.grad.cpu(), a.grad)


# ---- 6. the global fallback -----------------------------------------------------------


def test_global_fallback_is_registered():
    # cos.out has no accinte kernel: its PrivateUse1 entry is the global fallback.
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("aten::cos.out", "PrivateUse1")
    entry = kernel_entry("aten::cos.out", "PrivateUse1")
    assert "AccInteMinimal.cpp" in entry and "backend fallback" in entry
    x = make(torch.float32)
    out = torch.empty(4, 5, device=DEVICE)
    torch.cos(x.to(DEVICE), out=out)
    assert torch.equal(out.cpu(), x.cos())


def test_no_registration_of_the_library_overrides_another():
    # The library's static registrations run in link order, which the unity
    # build reverses unit by unit: the dispatcher scans (structured and shadowed
    # composites) must skip what other files register, whichever runs first.
    # Overridden, a registration stays in the table as "(inactive)".
    overridden = [f"{name}: {line}" for name in torch._C._dispatch_get_all_op_names()
                  for line in torch._C._dispatch_dump(name).splitlines()
                  if "(inactive)" in line and "/csrc/aten/" in line]
    assert not overridden, overridden


# ---- 7. registration from Python: torch.library ---------------------------------------


def python_kernel(op: str, key: str) -> bool:
    """True if `op`'s kernel for `key` was registered from Python (by torch.library)."""
    return "torch/library.py" in kernel_entry(op, key)


def test_python_custom_op_scaled_add():
    # custom_op registers the backward for the Autograd alias (every autograd key).
    for key in ("PrivateUse1", "Meta", "Autograd"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key("accinte::scaled_add", key), key
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("accinte::scaled_add", "CPU")
    a, b = make(torch.float32), make(torch.float32, seed=1)
    got = torch.ops.accinte.scaled_add(a.to(DEVICE), b.to(DEVICE), 0.5)
    torch.testing.assert_close(got.cpu(), a + 0.5 * b)
    with pytest.raises(RuntimeError, match="one shape"):
        torch.ops.accinte.scaled_add(a.to(DEVICE), b[:2].to(DEVICE), 0.5)


def test_python_custom_op_gradient_and_opcheck():
    a = make(torch.float32).to(DEVICE).requires_grad_()
    b = make(torch.float32, seed=1).to(DEVICE).requires_grad_()
    torch.ops.accinte.scaled_add(a, b, 3.0).sum().backward()
    assert torch.equal(a.grad.cpu(), torch.ones(4, 5))
    assert torch.equal(b.grad.cpu(), torch.full((4, 5), 3.0))
    # See test_custom_abs_passes_opcheck for the test left out.
    opcheck(torch.ops.accinte.scaled_add.default, (a, b, 3.0),
            test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_python_impl_overrides_an_aten_kernel_on_accinte_only():
    assert python_kernel("aten::frac", "PrivateUse1")
    assert not python_kernel("aten::frac", "CPU")
    x = torch.tensor([1.75, -0.5, -1.0, 0.0, float("inf"), float("nan"), 3e9 + 0.25],
                     dtype=torch.float64)
    torch.testing.assert_close(torch.frac(x.to(DEVICE)).cpu(), torch.frac(x), equal_nan=True)
    for dtype in (torch.int64, torch.bool, torch.float8_e5m2):  # the CPU's refusal, word for word
        with pytest.raises(NotImplementedError) as cpu:
            torch.frac(torch.zeros(2, dtype=dtype))
        with pytest.raises(NotImplementedError) as accinte:
            torch.frac(torch.zeros(2, dtype=dtype, device=DEVICE))
        assert str(accinte.value) == str(cpu.value)
    d = x[:4].to(DEVICE).requires_grad_()
    torch.frac(d).sum().backward()  # frac's own derivative formula still applies
    assert torch.equal(d.grad.cpu(), torch.ones(4, dtype=torch.float64))


# ---- 8. extending a namespace: TORCH_LIBRARY_FRAGMENT ---------------------------------


def test_fragment_adds_an_operator_to_the_accinte_namespace():
    assert registered_in("accinte::fused_add_relu", "PrivateUse1", "AccInteNamespaceExtension.cpp")
    assert registered_in("accinte::fused_add_relu", "Meta", "AccInteNamespaceExtension.cpp")
    a, b = make(torch.float32), make(torch.float32, seed=1)
    got = torch.ops.accinte.fused_add_relu(a.to(DEVICE), b.to(DEVICE))
    assert torch.equal(got.cpu(), torch.relu(a + b))
    m = torch.ops.accinte.fused_add_relu(a.to("meta"), b.to("meta"))
    assert m.shape == a.shape and m.device.type == "meta"
    with pytest.raises(RuntimeError, match="one shape"):
        torch.ops.accinte.fused_add_relu(a.to(DEVICE), b[:2].to(DEVICE))


# ---- 9. a fallthrough -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["Conjugate", "Negative"])
@pytest.mark.parametrize("op", ["aten::_copy_from", "aten::_copy_from_and_resize"])
def test_math_bit_keys_fall_through_for_copies(op, key):
    assert torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough(op, key)
    assert "AccInteFallthrough.cpp" in kernel_entry(op, key)


def test_copies_of_math_bit_views_resolve_the_bits():
    x = make(torch.complex64)
    d = x.to(DEVICE)
    assert torch.equal(d.conj().cpu(), x.conj())  # accinte -> CPU, conjugate bit set
    assert torch.equal(x.conj().to(DEVICE).cpu(), x.conj())  # CPU -> accinte
    dst = torch.empty_like(d)
    dst.copy_(d.conj().imag)  # negative bit set
    assert torch.equal(dst.cpu().real, x.conj().imag)


# ---- 10. overriding a CompositeImplicitAutograd default: aten::square -----------------


def test_square_is_overridden_for_both_keys():
    for key in ("PrivateUse1", "AutogradPrivateUse1"):
        assert registered_in("aten::square", key, "AccInteCompositeOverride.cpp"), key
    # Every other backend keeps the composite default.
    assert "CompositeImplicitAutograd" in kernel_entry("aten::square", "CPU")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8,
                                   torch.bool, torch.complex64], ids=str)
def test_square_override_runs_and_matches_cpu(dtype):
    x = make(dtype)
    before = calls("square")
    got = torch.square(x.to(DEVICE))
    assert calls("square") == before + 1
    assert got.dtype == torch.square(x).dtype
    torch.testing.assert_close(got.cpu(), torch.square(x))


def test_square_override_gradient_matches_cpu():
    x = make(torch.float32).requires_grad_()
    d = x.detach().to(DEVICE).requires_grad_()
    before = calls("square")
    out = torch.square(d)
    assert "MulBackward" in out.grad_fn.name()  # the override's, not pow's
    out.sum().backward()
    torch.square(x).sum().backward()
    assert calls("square") == before + 1
    torch.testing.assert_close(d.grad.cpu(), x.grad)


def test_square_override_runs_below_autograd_too():
    x = make(torch.float32).to(DEVICE)
    before = calls("square")
    with torch.inference_mode():
        y = torch.square(x)
    assert calls("square") == before + 1
    torch.testing.assert_close(y.cpu(), x.cpu() ** 2)


# ---- every form's kernels in strict mode --------------------------------------------

STRICT_SCRIPT = """
import torch
x = torch.tensor([[-1.5, 2.0], [0.5, -3.0]])
d = x.to("accinte")
checks = {
    "abs_stub": torch.equal(torch.abs(d).cpu(), x.abs()),
    "custom_abs": torch.equal(torch.ops.accinte.custom_abs(d).cpu(), x.abs()),
    "aliasing": torch.equal(torch.ops.accinte.custom_autograd_fn_aliasing(d).cpu(), x),
    "sub": torch.equal((d - d * 2).cpu(), x - x * 2),
    "scaled_add": torch.equal(torch.ops.accinte.scaled_add(d, d, 2.0).cpu(), x * 3),
    "frac": torch.equal(torch.frac(d).cpu(), torch.frac(x)),
    "fused_add_relu": torch.equal(torch.ops.accinte.fused_add_relu(d, d).cpu(), (2 * x).relu()),
    "conj copy": torch.equal(x.to(torch.complex64).to("accinte").conj().cpu(),
                             x.to(torch.complex64).conj()),
    "square": torch.equal(torch.square(d).cpu(), x * x),
}
print(sorted(k for k, ok in checks.items() if not ok))
"""


def test_every_form_works_in_strict_mode(run_python):
    # Host code that dereferenced device memory outside a kernel would fault here.
    out = run_python(STRICT_SCRIPT, env={"ACCINTE_STRICT": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
