"""Running the same work on the CPU and on accinte, the CPU as the oracle."""

from __future__ import annotations

import copy

import torch

from . import compat


def to_cpu(value):
    """Tensors inside nested lists/tuples/dicts, brought to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value)
    return value


# Libraries' models mix many kernels; where accinte's kernel is not the CPU's
# own (composite decompositions, other attention paths) float32 results drift
# by a few ulps, which an optimizer step can amplify to ~1e-5.
RTOL, ATOL = 1e-4, 1e-4


def run_both(library: str, check: str, fn, *, exact: bool = False, rtol=RTOL, atol=ATOL):
    """Runs ``fn(device)`` on the CPU and on accinte, compares what each
    returned (exactly, or within float32 drift), records the row part and
    returns the CPU's result. ``fn`` builds its own model, seeded, so both runs
    start from the same weights."""
    cpu, cpu_s = compat.timed(fn, "cpu")
    acc, acc_s = compat.timed(fn, "accinte")
    cpu, acc = to_cpu(cpu), to_cpu(acc)
    if exact:
        torch.testing.assert_close(acc, cpu, rtol=0, atol=0)
    else:
        torch.testing.assert_close(acc, cpu, rtol=rtol, atol=atol)
    compat.passed(library, check, cpu_s, acc_s)
    return cpu


def twin(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """A copy of a CPU-built model on ``device``."""
    return copy.deepcopy(model).to(device)
