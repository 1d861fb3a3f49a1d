"""The integration suite's session: results are written for the table."""

from __future__ import annotations

from . import compat


def pytest_sessionfinish(session, exitstatus):
    compat.write()
