"""Dtypes the CPU refuses, refused on accinte the same way at the call: every
OpInfo of op_db on every dtype its CPU kernel does not declare (bool,
complex32, float8, uint16..., see dtype_refusals.py), the same exception type
and message, nothing left for the next synchronisation; where the CPU accepts
after all, a result of its dtype and shape."""

from __future__ import annotations

import pytest

from .dtype_refusals import op_cases
from .opinfo_runner import op_db, op_key

_totals = {"ops": 0, "calls": 0, "refused": 0}


@pytest.mark.parametrize("op", op_db, ids=op_key)
def test_refused_like_the_cpu(op):
    cases = op_cases(op)
    _totals["ops"] += 1
    _totals["calls"] += len(cases)
    _totals["refused"] += sum(c.cpu.raised is not None for c in cases)
    differ = [c for c in cases if not c.agrees]
    assert not differ, "\n".join(
        f"{c.op} {c.dtype}: CPU {c.cpu.describe()}; accinte {c.accinte.describe()}" for c in differ)


def test_corpus_size():
    # The corpus is generated, so a change in op_db or in the generator could
    # empty it without any test failing: the three refusals of the issue
    # (abs of bool, bool matmul, complex32 sum) and hundreds more must be in it.
    if _totals["ops"] != len(op_db):
        pytest.skip("needs the whole op_db run in this session (run without -k)")
    print(f"\ndtype refusals: {_totals['calls']} calls, {_totals['refused']} refused by the CPU")
    assert _totals["refused"] >= 1000
