"""The engine's fidelity checks on every operator of PyTorch's op_db (see
fidelity_runner.py): error inputs raise the CPU's exception type at the call,
out= variants behave as the CPU's for preallocated, empty and wrongly-shaped
outputs, repeated calls and in-place variants give the CPU's result every time.

The calls of call_corpus.py, which no OpInfo makes, are held to the same
rules, one test each.

Known exceptions are data (known_failures.py, FIDELITY_EXCEPTIONS), each with
its reason. A failure not listed fails the test, and so does a listed one that
no longer fails, so the list stays exact.
"""

from __future__ import annotations

import pytest

from .call_corpus import CALLS, check_call
from .fidelity_runner import CHECKS, run_checks
from .known_failures import FIDELITY_EXCEPTIONS
from .opinfo_runner import op_db, op_key

_totals = {check: {"compared": 0, "failed": 0} for check in CHECKS}
_ops_run = []


# LITERALINCLUDE START: TESTING FIDELITY TESTS
@pytest.mark.parametrize("op", op_db, ids=op_key)
def test_engine_fidelity(op):
    key = op_key(op)
    _ops_run.append(key)
    unexpected, fixed = [], []
    for check, (compared, failures) in run_checks(op).items():
        _totals[check]["compared"] += compared
        _totals[check]["failed"] += len(failures)
        known = (check, key) in FIDELITY_EXCEPTIONS
        if failures and not known:
            unexpected.extend(f"{f.check} {f.op}: {f.detail}" for f in failures)
        if known and not failures:
            fixed.append(check)
    assert not unexpected, "\n".join(unexpected)
    assert not fixed, f"{key} now passes {fixed}: remove it from FIDELITY_EXCEPTIONS"


def test_fidelity_figures():
    if len(_ops_run) != len(op_db):
        pytest.skip("needs the whole op_db run in this session (run without -k)")
    for check, total in _totals.items():
        rate = (total["compared"] - total["failed"]) / max(total["compared"], 1)
        print(f"\nfidelity {check}: {total['compared']} compared, {total['failed']} failing, "
              f"{100 * rate:.2f}% pass")
# LITERALINCLUDE END: TESTING FIDELITY TESTS


@pytest.mark.parametrize("name", list(CALLS))
def test_call_corpus(name):
    why = check_call(name)
    assert why is None, f"{name}: {why}"
