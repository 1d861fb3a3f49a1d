"""The Python lint: ``ruff check`` over the repository passes, with the rules
of ``[tool.ruff]`` in pyproject.toml (ruff is pinned in requirements-test.txt).
The C and C++ layout is described by .clang-format and not checked here; their
sizes are, by tools/sz.py (tests/test_size.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed (pip install -r requirements-test.txt)")
def test_ruff_check_passes():
    # --no-cache: leave no .ruff_cache in the work tree. The configuration is
    # found from the working directory, the repository.
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
