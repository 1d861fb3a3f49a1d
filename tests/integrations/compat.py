"""What the integration suite measured, library by library: the compatibility
table in README.md and docs/chapters/ecosystem.md is generated from it
(tools/ecosystem_table.py), never written by hand.

Each test reports one row part: the library, the check it ran, and the time
ratio accinte/CPU of the same work measured in the same run. The session
writes everything to ``build/ecosystem.json``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

# benchmarks/bench_ecosystem.py writes its own file, leaving the table's source alone.
RESULTS = Path(os.environ.get("ACCINTE_ECOSYSTEM_RESULTS",
                              Path(__file__).resolve().parents[2] / "build" / "ecosystem.json"))

# What a user does to run the library on accinte; the table prints it as is.
USER_ACTION = {
    "transformers": "`model.to(\"accinte\")`; `pipeline(..., device=\"accinte\")`",
    "transformers Trainer": "nothing: transformers' `TrainingArguments()`, `bf16=True` included",
    "lightning": "nothing: `Trainer(accelerator=\"accinte\")`",
    "peft": "`model.to(\"accinte\")`",
    "diffusers": "`model.to(\"accinte\")`",
    "sentence-transformers": "`SentenceTransformer(..., device=\"accinte\")`",
    "torchmetrics": "`metric.to(\"accinte\")`",
    "timm": "cannot be installed next to torch 2.13 (see the reason)",
}
# The distribution whose version a row shows.
DISTRIBUTION = {"transformers Trainer": "transformers"}


@dataclass
class Row:
    library: str
    version: str = ""
    checks: list[str] = field(default_factory=list)
    skipped: str = ""
    cpu_seconds: float = 0.0
    accinte_seconds: float = 0.0
    # Per check: [check, CPU seconds, accinte seconds], for benchmarks/bench_ecosystem.py.
    timings: list[list] = field(default_factory=list)


_rows: dict[str, Row] = {}


def version_of(library: str) -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION.get(library, library))
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _row(library: str) -> Row:
    if library not in _rows:
        _rows[library] = Row(library, version_of(library))
    return _rows[library]


def passed(library: str, check: str, cpu_seconds: float = 0.0, accinte_seconds: float = 0.0) -> None:
    """Records that `check` of `library` matched the CPU, with its timings."""
    row = _row(library)
    row.checks.append(check)
    row.timings.append([check, cpu_seconds, accinte_seconds])
    row.cpu_seconds += cpu_seconds
    row.accinte_seconds += accinte_seconds


def skipped(library: str, reason: str) -> None:
    _row(library).skipped = reason


def timed(fn, device: str):
    """Runs ``fn(device)`` once and returns (result, seconds), device work included."""
    start = time.perf_counter()
    result = fn(device)
    if device != "cpu":
        torch.accinte.synchronize()
    return result, time.perf_counter() - start


def write() -> None:
    if not _rows:
        return
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    rows = [asdict(r) for r in sorted(_rows.values(), key=lambda r: r.library)]
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n")


def rows() -> list[Row]:
    return sorted(_rows.values(), key=lambda r: r.library)
