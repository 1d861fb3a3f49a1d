"""The compatibility table in README.md and docs/chapters/ecosystem.md is the
one this run of the integration suite produces (library, version, what ran);
tests/conftest.py runs this file after the rest of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from . import compat

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = {"transformers", "transformers Trainer", "lightning", "timm", "peft", "diffusers",
             "sentence-transformers", "torchmetrics"}


def test_every_library_has_a_row():
    measured = {r.library for r in compat.rows()}
    if measured != LIBRARIES:
        pytest.skip("needs the whole integration suite in this session (run without -k)")
    for row in compat.rows():
        assert row.checks or row.skipped, f"{row.library}: no check passed and no reason to skip"


def test_tables_come_from_this_run():
    if {r.library for r in compat.rows()} != LIBRARIES:
        pytest.skip("needs the whole integration suite in this session (run without -k)")
    compat.write()
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "ecosystem_table.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
