"""What CUDA accepts and the CPU refuses, searched again from the installed
torch (cuda_capabilities.py): every candidate has a decision, every decision
matches a candidate, and every candidate decided "kernel" runs on accinte. A
new PyTorch that adds a CUDA-only operator or dtype fails here until it is
triaged (and the table in docs/chapters/operators.md updated)."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from . import cuda_capabilities as C
from .dtype_refusals import _base_dtype, _call, _cast
from .opinfo_runner import op_db, op_key
from .samples import sample_inputs


@pytest.fixture(scope="module")
def found() -> dict[str, list[str]]:
    """The search, run once: candidates by source."""
    return {"dtypes": list(C.dtype_candidates()), "backward": list(C.backward_candidates()),
            "operators": C.dispatch_candidates()}


@pytest.fixture(scope="module")
def candidates(found) -> list[str]:
    return [name for names in found.values() for name in names]


def test_every_candidate_is_triaged_once(candidates):
    untriaged = [c for c in candidates if C.triage(c) is None]
    assert not untriaged, f"not triaged (none or several TRIAGE entries match): {untriaged}"
    unused = [p for p, _, _ in C.TRIAGE if not any(re.fullmatch(p, c) for c in candidates)]
    assert not unused, f"TRIAGE entries matching no candidate: {unused}"
    # The search finds what the issue named: integer histc, SyncBatchNorm.
    assert "histc int32" in candidates and "batch_norm_stats" in candidates


def test_operators_decided_kernel_have_an_accinte_kernel(found):
    for name in found["operators"]:
        if C.triage(name)[0] == "kernel":
            op = "aten::" + name
            assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1"), op


def test_dtypes_decided_kernel_run_on_accinte(found):
    decided = {c for c in found["dtypes"] if C.triage(c)[0] == "kernel"}
    ran = set()
    for op in op_db:
        base = _base_dtype(op)
        for dtype in set(op.dtypesIf["cuda"]) - set(op.dtypes):
            name = f"{op_key(op)} {C._dtype_name(dtype)}"
            if name not in decided:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sample = next(sample_inputs(op, "accinte", base))
            outcome = _call(op, _cast(sample, base, dtype), "accinte")
            assert outcome.raised is None and not outcome.late, f"{name}: {outcome.describe()}"
            assert all(d == dtype for d, _ in outcome.shapes), f"{name}: {outcome.shapes}"
            ran.add(name)
    assert ran == decided
