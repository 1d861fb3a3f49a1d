"""What PyTorch's own 2023 device-generic tests found accinte doing otherwise
than the CPU (issue 29), each case reduced to a few lines: validation errors
at the call, never at the next synchronize; the CPU's warnings; the CPU's
bits; sparse gradients of embedding_bag. Each test fails without its fix.
"""

from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_utils import DeterministicGuard

from held_stream import hold_stream

DEVICE = "accinte"


def both(fn):
    """(CPU's exception, accinte's exception) of `fn(device)`, and nothing
    left for the next synchronize."""
    errors = []
    for device in ("cpu", DEVICE):
        try:
            fn(device)
            errors.append(None)
        except Exception as error:  # noqa: BLE001 — compared with the CPU's
            errors.append(error)
    torch.accinte.synchronize()  # raises a late error
    return errors


@pytest.mark.parametrize("dst, src", [((3,), (2, 3)), ((3,), (4,)), ((0,), (3,)),
                                      ((1, 3), (2, 3)), ((), (1,))])
@pytest.mark.parametrize("src_device", ["cpu", DEVICE])
def test_copy_refuses_a_source_that_does_not_broadcast_at_the_call(dst, src, src_device):
    cpu_error, error = both(
        lambda d: torch.zeros(dst, device=d).copy_(torch.ones(src, device=src_device)))
    assert cpu_error is not None and type(error) is type(cpu_error)
    assert str(error) == str(cpu_error)


def test_in_place_ldexp_refuses_to_grow_self_at_the_call():
    # ldexp_ is mul.out(self, self, 2 ** other): the CPU kernel must see that
    # its output is its input (Note [accinte a tensor passed twice]).
    for _ in range(2):  # the first call of a signature and a later one
        cpu_error, error = both(lambda d: torch.ones(3, device=d).ldexp_(
            torch.ones(2, 3, dtype=torch.int64, device=d)))
        assert isinstance(error, RuntimeError) and str(error) == str(cpu_error)


def test_abs_of_float8_e8m0fnu_is_refused_at_the_call():
    t = torch.ones(3, device=DEVICE).to(torch.float8_e8m0fnu)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e8m0fnu'"):
        t.abs()
    torch.accinte.synchronize()
    t = torch.ones(3, device=DEVICE).to(torch.float8_e4m3fn)  # the CPU's other float8 types
    assert torch.equal(t.abs().cpu().float(), torch.ones(3))


@pytest.mark.parametrize("factory", [torch.empty, torch.ones, torch.randn])
def test_complex32_tensors_warn_that_support_is_experimental(factory):
    torch.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
            factory(3, dtype=torch.chalf, device=DEVICE)
    finally:
        torch.set_warn_always(False)


def test_a_warning_given_once_per_process_reaches_the_first_call(run_python):
    # TORCH_WARN_ONCE: spent by the first call's run on host stand-ins, it
    # would never reach the caller (Note [accinte a warning ends a run on
    # stand-ins]). A fresh interpreter: the warning is once per process.
    result = run_python("""
import warnings, torch
v = torch.arange(6, device="accinte").reshape(2, 3).t()
for _ in range(2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.searchsorted(torch.arange(6.0, device="accinte"), v)
    print(len([w for w in caught if "non-contiguous" in str(w.message)]))
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "0"]


def test_a_kernel_computes_in_the_default_dtype_it_was_launched_under():
    # Note [accinte kernels and process-wide settings]: integer true division
    # computes in the default dtype, which the kernel reads when it runs.
    torch.manual_seed(0)
    a, b = torch.randint(-2**62, 2**62, (2, 4096))
    da, db = a.to(DEVICE), b.to(DEVICE)
    torch.set_default_dtype(torch.float64)
    try:
        expected = torch.divide(a, b)
        torch.divide(da, db)  # the first call of the signature runs at the call
        with hold_stream(timeout=2):
            got = torch.divide(da, db)  # queued behind the held kernel
            torch.set_default_dtype(torch.float32)  # waits for it
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.equal(got.cpu(), expected)


def test_index_copy_queued_under_deterministic_algorithms_keeps_the_last_repeated_index():
    # test_torch.py::test_index_copy_deterministic: the CPU kernel copies
    # serially while deterministic algorithms are on and in parallel, racing
    # between repeated indices, while they are off; it reads the process-wide
    # flag when it runs (Note [accinte kernels and process-wide settings]).
    # Queued under DeterministicGuard and run after the guard ended, it kept
    # another repeated index's row than the CPU once the worker's threads had
    # run a parallel kernel (the earlier test_index_add_deterministic).
    torch.manual_seed(0)
    x, src = torch.zeros(2000, 4, 3), torch.rand(40000, 4, 3)
    index = torch.randint(2000, (40000,))
    with DeterministicGuard(True):
        expected = torch.index_copy(x, 0, index, src)
    dx, dindex, dsrc = x.to(DEVICE), index.to(DEVICE), src.to(DEVICE)
    dx.index_add(0, dindex, dsrc).cpu()  # a parallel kernel on the worker's threads
    for _ in range(3):  # the first call of the signature, and queued ones
        with hold_stream(timeout=1):
            with DeterministicGuard(True):
                got = torch.index_copy(dx, 0, dindex, dsrc)  # queued behind the held kernel
        assert torch.equal(got.cpu(), expected)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_eig_refuses_non_finite_input_at_the_call(value):
    # CUDA computes linalg.eig on the host after a .item() check of its input:
    # the error is raised at the call there (test_linalg.py::test_eig_with_nan).
    def eig(device):
        a = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0)).to(device)
        a[..., -1, -1] = value
        torch.linalg.eig(a)

    for _ in range(2):  # the first call of the signature, and a later one
        cpu_error, error = both(eig)
        assert isinstance(error, RuntimeError) and str(error) == str(cpu_error)


@pytest.mark.parametrize("call", ["torch.linalg.eigvals(a)",
                                  "torch.linalg.eigvals(a, out=torch.empty(0, 4, device=d,"
                                  " dtype=torch.complex64))"])
def test_eigvals_refuses_non_finite_input_where_the_cpu_crashes(run_python, call):
    # Note [accinte eigvals refuses non-finite input]: the CPU's kernel crashes
    # in MKL (pytorch#185247); in a child, since without the check so would accinte.
    out = run_python(f"""
        import torch
        d = "accinte"
        a = torch.eye(4, device=d)
        a[1, 2] = float("nan")
        try:
            {call}
        except RuntimeError as e:
            print(e)
        print(torch.linalg.eigvals(torch.eye(2, device=d)).cpu().tolist())
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == [
        "torch.linalg.eigvals: input tensor should not contain infs or NaNs.",
        "[(1+0j), (1+0j)]"], out.stdout


# A singular or non-positive-definite input, and an _ex operator asked to check_errors.
CHECK_ERRORS = {
    "inv_ex": lambda a: torch.linalg.inv_ex(a, check_errors=True),
    "cholesky_ex": lambda a: torch.linalg.cholesky_ex(-a, check_errors=True),
    "lu_factor_ex": lambda a: torch.linalg.lu_factor_ex(a * 0, check_errors=True),
    "solve_ex": lambda a: torch.linalg.solve_ex(a, torch.ones_like(a), check_errors=True),
}


@pytest.mark.parametrize("name", sorted(CHECK_ERRORS))
def test_check_errors_raises_at_the_call(name):
    # CUDA's _ex kernels wait for their info tensor when asked to check_errors
    # (test_linalg.py::test_inv_ex_singular); without it the call is queued.
    def call(device):
        a = torch.eye(3, device=device).repeat(4, 1, 1)
        a[2, -1, -1] = 0
        return CHECK_ERRORS[name](a)

    for _ in range(2):
        cpu_error, error = both(call)
        assert cpu_error is not None  # LinAlgError, RuntimeError for lu_factor_ex
        assert type(error) is type(cpu_error) and str(error) == str(cpu_error)
    a = torch.eye(3, device=DEVICE)
    with hold_stream() as hold:
        torch.linalg.inv_ex(a)
        assert hold.held(), "inv_ex without check_errors waited for the device"


@pytest.mark.parametrize("case", ["padding_idx", "half", "per_sample_weights"])
def test_sparse_embedding_bag_gradients_are_the_cpus(case):
    dtype = torch.half if case == "half" else torch.float32
    weight = torch.randn(10, 3, dtype=dtype)
    indices, offsets = torch.tensor([1, 2, 1, 4, 5, 1]), torch.tensor([0, 3])
    per_sample = torch.rand(6) if case == "per_sample_weights" else None
    grads = []
    for device in ("cpu", DEVICE):
        w = weight.detach().to(device).requires_grad_()
        out = F.embedding_bag(indices.to(device), w, offsets.to(device), mode="sum", sparse=True,
                              padding_idx=1 if case == "padding_idx" else None,
                              per_sample_weights=None if per_sample is None else per_sample.to(device))
        out.sum().backward()
        assert w.grad.layout == torch.sparse_coo
        grads.append(w.grad.cpu().to_dense())
    assert torch.equal(grads[1], grads[0])


@pytest.mark.parametrize("mean", [0.0, "tensor"])
def test_normal_refuses_a_negative_std_element_at_the_call(mean):
    # Data, but CUDA checks it at the call (its .item() waits): Note [accinte
    # normal checks std at the call].
    std = torch.tensor([1.0, -1.0], device=DEVICE)
    m = torch.zeros(2, device=DEVICE) if mean == "tensor" else mean
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"normal expects all elements of std >= 0.0"):
            torch.normal(m, std)
    torch.accinte.synchronize()


def test_embedding_bag_backwards_of_small_shapes_do_not_crash(run_python):
    # The backward indexes with the forward's bag offsets, unchecked: run on
    # host stand-ins' made-up values it read out of bounds (OpPlan's
    # trusts_its_indices). A child: a crash fails this test only.
    result = run_python("""
import itertools, torch
for max_norm, n, d, b, l in itertools.product([None, 3], *[[1, 2]] * 4):
    for mode, (idt, odt) in itertools.product(["sum", "mean", "max"],
                                              itertools.product([torch.int32, torch.int64], repeat=2)):
        grads = []
        for device in ("cpu", "accinte"):
            torch.manual_seed(0)
            bag = torch.nn.EmbeddingBag(n, d, mode=mode, max_norm=max_norm).to(device)
            indices = torch.randint(n, (b * l,), dtype=idt).to(device)
            offsets = torch.arange(0, b, dtype=odt).mul_(l).to(device)
            bag(indices, offsets).backward(torch.ones(b, d, device=device))
            grads.append(bag.weight.grad.cpu())
        assert torch.equal(grads[0], grads[1]), (n, d, b, l, mode)
print("ok")
""")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["ok"]


@pytest.mark.parametrize("indexed, index", [("cpu", DEVICE), (DEVICE, "accinte:1")])
def test_indices_on_another_device_than_the_indexed_tensor_are_refused(indexed, index):
    # PyTorch's rule for every device: indices on the CPU or on the indexed
    # tensor's device. Without the check the fallback indexed a CPU tensor
    # with accinte indices and returned an accinte tensor.
    if torch.accinte.device_count() < 2 and index == "accinte:1":
        pytest.skip("needs two accinte devices")
    x = torch.randn(3, 4, device=indexed)
    i = torch.tensor([0, 2, 1], device=index)
    expected = ("indices should be either on cpu or on the same device as the indexed tensor "
                rf"\({x.device}\)")
    with pytest.raises(RuntimeError, match=expected):
        x[i]
    with pytest.raises(RuntimeError, match=expected):
        x[i] = 1.0
    torch.accinte.synchronize()
    assert torch.equal(x.cpu()[i.cpu()], x[i.cpu()].cpu())  # CPU indices stay allowed
