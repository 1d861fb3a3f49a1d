"""Shared fixtures: tests run against the installed torch_accinte.

Tests that need a fresh process (environment variables read once at start-up,
fork, faults) use `run_python`, which runs a script in a child interpreter and
returns the CompletedProcess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "not_under_sanitizer(reason): skipped by `make sanitize` (tools/sanitize.sh sets "
        "ACCINTE_SANITIZER=1) for the reason given; listed in docs/chapters/testing.md")


def pytest_collection_modifyitems(config, items):
    """The OpInfo conformance suite runs last: it is the longest part, and the
    device-memory accounting tests want a device no other test has filled.
    The integration suite's table check follows the rest of that suite.
    Under the sanitizer, tests marked not_under_sanitizer skip with their reason."""
    items.sort(key=lambda item: ("conformance" in item.nodeid,
                                 "integrations/test_table.py" in item.nodeid))
    if os.environ.get("ACCINTE_SANITIZER") == "1":
        for item in items:
            for mark in item.iter_markers("not_under_sanitizer"):
                item.add_marker(pytest.mark.skip(reason=f"under make sanitize: {mark.args[0]}"))


@pytest.fixture
def run_python():
    def run(source: str, env: dict[str, str] | None = None, timeout: float = 120):
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(source)],
            env=full_env, capture_output=True, text=True, timeout=timeout,
        )

    return run
