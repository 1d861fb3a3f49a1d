"""The robustness suite's fixture: one fork server per session (cases.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import Cases  # noqa: E402


@pytest.fixture(scope="session")
def cases():
    """Runs a case in a fresh child of the fork server: `cases.check(source)`
    fails the test unless the case (and the device check after it) passed."""
    server = Cases()
    yield server
    server.close()
