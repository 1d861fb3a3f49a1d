"""Operators called with a dtype their CPU kernel does not take.

PyTorch's CPU kernels refuse a dtype they have no instance for at the call:
`abs` of a bool tensor, a bool `matmul`, the `sum` of complex32 raise
`NotImplementedError` ("... not implemented for 'Bool'"), others raise
`RuntimeError` or `TypeError`. accinte must raise the same exception, with the
same message, at the call, never accept the call or leave an error for a
later synchronisation (see Note [accinte fallback]).

The corpus is generated: for every OpInfo in `op_db`, its first sample is made
on accinte in a dtype the CPU supports, and the tensors of that dtype are cast
to each dtype of DTYPES the OpInfo does not declare for the CPU. The CPU copy
of the sample runs first; whatever it does (raise, or return) accinte must do
too: the same exception type and message at the call and nothing raised by
the next `synchronize()`, or a result of the CPU's dtype and shape. Two
exceptions: messages may name the device where the CPU's name the CPU
(`same_message`), and where accinte answers as CUDA does (`cuda_parity`:
integer `histc`, half and bfloat16 `avg_pool3d` and antialiased resizes).

`python -m tests.conformance.dtype_refusals` prints the corpus and every
mismatch; tests/conformance/test_dtype_refusals.py asserts on the same results.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import torch

from .opinfo_runner import _flatten, _to_cpu, op_db, op_key
from .samples import sample_inputs

# Every dtype a tensor can have, the unusual ones included.
DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint16, torch.uint32, torch.uint64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex32, torch.complex64, torch.complex128,
    torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz,
]


@dataclasses.dataclass
class Outcome:
    """What one call did: `raised` is the exception type (None if it
    returned); `message` its first line; `late` an error the next
    synchronisation raised; `shapes` the returned tensors' dtypes and shapes."""
    raised: type | None
    message: str = ""
    late: str = ""
    shapes: tuple = ()

    def describe(self) -> str:
        if self.late:
            return f"returned, then synchronize() raised {self.late}"
        if self.raised is None:
            return f"returned {self.shapes}"
        return f"{self.raised.__name__}: {self.message}"


def same_message(cpu: str, accinte: str) -> bool:
    """The CPU's message, up to the device's name where a message names it:
    a kernel of accinte's own names itself ("abs_accinte" for the CPU's
    "abs_cpu", as CUDA's "abs_cuda" does) and a tensor's type name names its
    device ("accinteByteType" for "torch.ByteTensor")."""
    accinte = re.sub(r'"(\w+)_accinte"', r'"\1_cpu"', accinte)
    accinte = re.sub(r"\baccinte(\w+)Type\b", r"torch.\1Tensor", accinte)
    return cpu == accinte


# Where accinte answers as CUDA does, not as the CPU (Note [accinte CUDA
# parity] in csrc/emulation/shims/Histc.cpp; the list of candidates is
# cuda_capabilities.py): integer histc, whose dtypes are CUDA's, so the
# unsigned ones beyond uint8 are refused with CUDA's message; half and
# bfloat16 where CUDA computes them in float (Note [accinte low precision as
# CUDA]).
_CUDA_HISTC_REFUSES = {torch.uint16: "UInt16", torch.uint32: "UInt32", torch.uint64: "UInt64"}
_CUDA_FLOAT_COMPUTE = {"nn.functional.avg_pool3d", "_upsample_bilinear2d_aa"}


def cuda_parity(op_name: str, dtype: torch.dtype) -> Outcome | None:
    """What accinte must do instead of the CPU's outcome, or None."""
    if op_name in _CUDA_FLOAT_COMPUTE and dtype in (torch.float16, torch.bfloat16):
        return Outcome(None, shapes=None)  # returns, as CUDA's kernel does
    if op_name != "histc" or dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return None
    if dtype in _CUDA_HISTC_REFUSES:
        return Outcome(NotImplementedError,
                       f"\"histc\" not implemented for '{_CUDA_HISTC_REFUSES[dtype]}'")
    return Outcome(None, shapes=None)  # returns, as CUDA's kernel does


@dataclasses.dataclass
class Case:
    op: str
    dtype: torch.dtype
    cpu: Outcome
    accinte: Outcome
    expected: Outcome | None = None  # CUDA's outcome, where accinte follows CUDA

    @property
    def agrees(self) -> bool:
        e, a = self.expected or self.cpu, self.accinte
        if a.late or e.raised is not a.raised:
            return False
        if e.raised:
            return same_message(e.message, a.message)
        return e.shapes is None or e.shapes == a.shapes


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def _call(op, sample, device: str) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = op(sample.input, *sample.args, **sample.kwargs)
        except Exception as error:  # noqa: BLE001 — the exception is the result
            return Outcome(type(error), _first_line(error))
    shapes = tuple((t.dtype, tuple(t.shape)) for t in _flatten(result)
                   if isinstance(t, torch.Tensor))
    if device != "cpu":
        try:
            torch.accinte.synchronize()
        except Exception as error:  # noqa: BLE001
            return Outcome(None, late=f"{type(error).__name__}: {_first_line(error)}")
    return Outcome(None, shapes=shapes)


def _base_dtype(op):
    supported = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64, torch.bool):
        if dtype in supported:
            return dtype
    return None


def _cast(sample, base, dtype):
    return sample.transform(
        lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == base else t)


def op_cases(op) -> list[Case]:
    """Every dtype of DTYPES that `op` does not declare for the CPU, on the
    first sample of `op`, on both devices."""
    base = _base_dtype(op)
    if base is None:
        return []
    supported = op.supported_dtypes("cpu")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sample = next(sample_inputs(op, "accinte", base))
        cpu_base = sample.transform(_to_cpu)
    except Exception:  # noqa: BLE001 — no sample, nothing to compare
        return []
    cases = []
    # LITERALINCLUDE START: TESTING DTYPE REFUSALS
    for dtype in DTYPES:
        if dtype in supported:
            continue
        try:
            device_sample = _cast(sample, base, dtype)
            cpu_sample = _cast(cpu_base, base, dtype)
        except Exception:  # noqa: BLE001 — the cast itself is refused on both
            continue
        cpu = _call(op, cpu_sample, "cpu")
        if cpu.raised is not None and cpu.raised not in (NotImplementedError, RuntimeError,
                                                         TypeError):
            continue  # an OpInfo wrapper's own check (ValueError, assertions)
        cases.append(Case(op_key(op), dtype, cpu, _call(op, device_sample, "accinte"),
                          cuda_parity(op.name, dtype)))
    # LITERALINCLUDE END: TESTING DTYPE REFUSALS
    return cases


def main() -> None:
    import collections
    import sys

    cases = [case for op in op_db for case in op_cases(op)]
    kinds = collections.Counter(c.cpu.raised.__name__ if c.cpu.raised else "returned" for c in cases)
    bad = [c for c in cases if not c.agrees]
    print(f"{len(cases)} calls, CPU: {dict(kinds)}; {len(bad)} differ on accinte")
    verbose = "-v" in sys.argv
    for c in cases if verbose else bad:
        mark = "ok  " if c.agrees else "DIFF"
        print(f"{mark} {c.op} {str(c.dtype).replace('torch.', '')}: CPU {c.cpu.describe()}"
              f" | accinte {c.accinte.describe()}")


if __name__ == "__main__":
    main()
