"""OpInfo conformance: every operator of PyTorch's op_db gives the CPU's answer
on accinte, forward for float32, float64, float16, bfloat16, complex64, int64
and bool, backward for float32 and float64 (see opinfo_runner.py).

The same operators run once more under torch.inference_mode() (first float32
sample, forward): none may fail there.

Known failures are data (known_failures.py), each with its reason. A failure
not listed fails the test, and so does a listed one that no longer fails, so
the list stays exact.
"""

from __future__ import annotations

import pytest
import torch

from .known_failures import KNOWN_FAILURES, MIN_PASS_RATE
from .opinfo_runner import op_db, op_key, run_op

_totals = {"ops": 0, "compared": 0, "failed": 0}


# LITERALINCLUDE START: TESTING OPINFO TESTS
@pytest.mark.parametrize("op", op_db, ids=op_key)
def test_matches_cpu(op):
    compared, failures = run_op(op)
    _totals["ops"] += 1
    _totals["compared"] += compared
    _totals["failed"] += len(failures)
    key = op_key(op)
    failing = {f.dtype for f in failures}
    known = {dtype for (name, dtype) in KNOWN_FAILURES if name == key}
    unexpected = [f for f in failures if f.dtype not in known]
    assert not unexpected, "\n".join(
        f"{key} {f.dtype} sample {f.sample} {f.stage}: {f.error}" for f in unexpected)
    fixed = known - failing
    assert not fixed, f"{key} now passes for {sorted(fixed)}: remove it from known_failures.py"


@pytest.mark.parametrize("op", op_db, ids=op_key)
def test_matches_cpu_under_inference_mode(op):
    """Stream kernels see the caller's inference mode (Note [accinte kernels
    see their caller's state]): the first float32 sample of every operator,
    forward, with both devices under torch.inference_mode()."""
    _, failures = run_op(op, max_samples=1, dtypes=[torch.float32], inference=True)
    assert not failures, "\n".join(f"{op_key(op)} sample {f.sample}: {f.error}" for f in failures)


def test_pass_rate():
    if _totals["ops"] != len(op_db):
        pytest.skip("needs the whole op_db run in this session (run without -k)")
    rate = (_totals["compared"] - _totals["failed"]) / _totals["compared"]
    print(f"\nOpInfo conformance: {_totals['compared']} samples, {_totals['failed']} failing, "
          f"{100 * rate:.2f}% pass")
    assert rate >= MIN_PASS_RATE
# LITERALINCLUDE END: TESTING OPINFO TESTS
