"""Calls the op_db checks do not make, compared with the CPU the same way.

`op_db`'s samples and error inputs call each operator as its OpInfo
describes; PyTorch's own device-generic tests call them in ways no OpInfo
does, and found accinte raising validation errors at the next synchronize
instead of at the call, missing warnings and other bits (issue 29). Each
entry here is such a call, written once against a device: it runs on the CPU,
then on accinte, and must do the same there, at the call:

- the CPU's exception type and message (up to the device's name, as in
  dtype_refusals.same_message), and nothing raised by the next
  `synchronize()`;
- or the CPU's result, bit for bit, with the CPU's warnings (counted under
  `torch.set_warn_always(True)`, so that a warning given once per process is
  given by both).

`python -m tests.conformance.call_corpus` prints every difference;
tests/conformance/test_fidelity_checks.py asserts on the same results.
"""

from __future__ import annotations

import contextlib
import re
import warnings

import torch
import torch.nn.functional as F
from torch.testing._internal.common_utils import DeterministicGuard

from .dtype_refusals import same_message


def _held_then(fn):
    """`fn` run a second time while the stream is busy, so that it is queued
    (the first call of a signature is checked at the call)."""
    def run(device):
        fn(device)
        if device != "cpu":
            torch.accinte._sleep(50)
        return fn(device)
    return run


@contextlib.contextmanager
def _default_dtype(dtype):
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def _true_division_in_float64(device):
    torch.manual_seed(0)
    a, b = (t.to(device) for t in torch.randint(-2**62, 2**62, (2, 4096)))
    with _default_dtype(torch.float64):
        result = torch.divide(a, b)  # computes in the default dtype
    return result


def _index_copy_of_repeated_indices_deterministic(device):
    torch.manual_seed(0)
    x, src = torch.zeros(2000, 4, 3).to(device), torch.rand(40000, 4, 3).to(device)
    index = torch.randint(2000, (40000,)).to(device)
    x.index_add(0, index, src)  # a parallel kernel: the kernels' threads are started
    with DeterministicGuard(True):
        result = torch.index_copy(x, 0, index, src)  # serial: the last repeated index wins
    return result


def _eig_of_a_nan(device):
    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    a[-1, -1] = float("nan")
    return torch.linalg.eig(a.to(device))


def _singular(device):
    a = torch.eye(3, device=device)
    a[-1, -1] = 0
    return a


def _sparse_embedding_bag_grad(dtype, padding_idx=None, per_sample=False):
    def run(device):
        torch.manual_seed(0)
        weight = torch.randn(10, 3, dtype=dtype).to(device).requires_grad_()
        weights = torch.rand(6, dtype=dtype).to(device) if per_sample else None
        out = F.embedding_bag(torch.tensor([1, 2, 1, 4, 5, 1], device=device), weight,
                              torch.tensor([0, 3], device=device), mode="sum", sparse=True,
                              padding_idx=padding_idx, per_sample_weights=weights)
        out.sum().backward()
        return weight.grad.to_dense()
    return run


def _searchsorted_non_contiguous(device):
    values = torch.arange(6, device=device).reshape(2, 3).t()
    return torch.searchsorted(torch.arange(6.0, device=device), values)


# LITERALINCLUDE START: TESTING CALL CORPUS
# name -> fn(device): each raises, or returns tensors, as the CPU does.
CALLS = {
    "copy_ from a larger shape": lambda d: torch.zeros(3, device=d).copy_(torch.ones(2, 3, device=d)),
    "copy_ from a mismatched shape": lambda d: torch.zeros(3, device=d).copy_(torch.ones(4, device=d)),
    "copy_ from the host, larger": lambda d: torch.zeros(3, device=d).copy_(torch.ones(2, 3)),
    "in-place ldexp growing self": _held_then(lambda d: torch.ones(3, device=d).ldexp_(
        torch.ones(2, 3, dtype=torch.int64, device=d))),
    "in-place mul growing self": _held_then(lambda d: torch.ones(3, device=d).mul_(
        torch.ones(2, 3, device=d))),
    "eigh of non-square matrices": lambda d: torch.linalg.eigh(torch.randn(2, 3, device=d)),
    "eigh of a batch of non-square matrices": lambda d: torch.linalg.eigh(torch.randn(4, 2, 3, device=d)),
    "masked_select into an out of another dtype": lambda d: torch.masked_select(
        torch.ones(3, device=d), torch.ones(3, dtype=torch.bool, device=d),
        out=torch.empty(3, dtype=torch.int64, device=d)),
    "bucketize into an out of another dtype": lambda d: torch.bucketize(
        torch.ones(3, device=d), torch.arange(3.0, device=d),
        out=torch.empty(3, dtype=torch.int32, device=d)),
    "normal with a negative std element": lambda d: torch.normal(
        torch.zeros(2, device=d), torch.tensor([1.0, -1.0], device=d)),
    "abs of float8_e8m0fnu": lambda d: torch.ones(3, device=d).to(torch.float8_e8m0fnu).abs(),
    "empty complex32 (experimental warning)": lambda d: torch.zeros(3, dtype=torch.chalf, device=d),
    "searchsorted of non-contiguous values (warning)": _searchsorted_non_contiguous,
    "integer true division under a float64 default dtype": _held_then(_true_division_in_float64),
    "linalg.eig of a matrix holding a NaN": _held_then(_eig_of_a_nan),
    "inv_ex of a singular matrix, check_errors": _held_then(
        lambda d: torch.linalg.inv_ex(_singular(d), check_errors=True)),
    "solve_ex of a singular matrix, check_errors": _held_then(
        lambda d: torch.linalg.solve_ex(_singular(d), torch.ones(3, device=d), check_errors=True)),
    "index_copy of repeated indices under deterministic algorithms": _held_then(
        _index_copy_of_repeated_indices_deterministic),
    "sparse embedding_bag gradient, padding_idx": _sparse_embedding_bag_grad(torch.float32, 1),
    "sparse embedding_bag gradient, half": _sparse_embedding_bag_grad(torch.half),
    "sparse embedding_bag gradient, per-sample weights": _sparse_embedding_bag_grad(
        torch.float32, per_sample=True),
}
# LITERALINCLUDE END: TESTING CALL CORPUS


def _outcome(fn, device):
    """(result or exception, warning messages, late error)."""
    late = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.set_warn_always(True)
        try:
            got = fn(device)
        except Exception as error:  # noqa: BLE001 — compared with the CPU's
            got = error
        finally:
            torch.set_warn_always(False)
    if device != "cpu":
        try:
            torch.accinte.synchronize()
        except Exception as error:  # noqa: BLE001
            late = error
    # A C++ warning names the source line that raised it: the CPU's or accinte's.
    messages = (re.sub(r" \(Triggered internally at .*\)$", "", str(w.message)) for w in caught)
    return got, sorted(messages), late


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _bits(t):
    t = t.detach().cpu().contiguous().view(-1)
    return t.view(torch.uint8) if t.numel() else t


def check_call(name) -> str | None:
    """None if accinte does what the CPU does for CALLS[name], else what differs."""
    fn = CALLS[name]
    expected, cpu_warnings, _ = _outcome(fn, "cpu")
    got, got_warnings, late = _outcome(fn, "accinte")
    if late is not None:
        return f"late error at synchronize: {str(late).splitlines()[0][:160]}"
    if isinstance(expected, Exception) or isinstance(got, Exception):
        if type(got) is not type(expected) or not same_message(str(expected), str(got)):
            return f"raised {type(got).__name__}: {str(got)[:160]}; CPU {type(expected).__name__}: " \
                   f"{str(expected)[:160]}"
    else:
        pairs = list(zip(_tensors(got), _tensors(expected)))
        if len(pairs) != len(_tensors(expected)) or not all(
                g.dtype == e.dtype and g.shape == e.shape and torch.equal(_bits(g), _bits(e))
                for g, e in pairs):
            return "results differ from the CPU's"
    if got_warnings != cpu_warnings:
        return f"warnings {got_warnings}; CPU {cpu_warnings}"
    return None


def main() -> None:
    for name in CALLS:
        why = check_call(name)
        print(f"{'ok  ' if why is None else 'FAIL'} {name}" + (f": {why}" if why else ""))


if __name__ == "__main__":
    main()
