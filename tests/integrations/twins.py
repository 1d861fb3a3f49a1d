"""Running the same work on the CPU and on accinte, the CPU as the oracle."""

from __future__ import annotations

import copy
import os
import statistics

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


# accinte runs the CPU's own kernels, asynchronously: results are the CPU's
# bits. A check that cannot be exact passes its tolerance and says why.
RTOL, ATOL = 0, 0
# Timed runs per device, the devices alternating: the table's ratio is the
# medians' (benchmarks/bench_ecosystem.py raises it for a steadier figure).
REPEATS = int(os.environ.get("ACCINTE_ECOSYSTEM_REPEATS", "3"))


def run_both(library: str, check: str, fn, *, rtol=RTOL, atol=ATOL):
    """Runs ``fn(device)`` on the CPU and on accinte, compares what each
    returned (bit for bit unless tolerances are given), records the row part
    with the median time of each device over ``REPEATS`` alternating runs and
    returns the CPU's result. ``fn`` builds its own model, seeded, so every
    run starts from the same weights."""
    # One untimed run per device first: the first call pays one-time costs
    # (imports, first-call checks of each signature) that are not the ratio.
    fn("cpu")
    fn("accinte")
    cpu_s, acc_s = [], []
    for _ in range(REPEATS):
        cpu, seconds = compat.timed(fn, "cpu")
        cpu_s.append(seconds)
        acc, seconds = compat.timed(fn, "accinte")
        acc_s.append(seconds)
    cpu, acc = to_cpu(cpu), to_cpu(acc)
    torch.testing.assert_close(acc, cpu, rtol=rtol, atol=atol, equal_nan=True)
    compat.passed(library, check, statistics.median(cpu_s), statistics.median(acc_s))
    return cpu


def twin(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """A copy of a CPU-built model on ``device``."""
    return copy.deepcopy(model).to(device)
