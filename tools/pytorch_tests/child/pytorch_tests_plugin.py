"""The pytest plugin the runner loads into each child (`-p pytorch_tests_plugin`).

The runner puts this folder on PYTHONPATH and names a JSON configuration in
PYTORCH_TESTS_RUNNER_CONFIG:

    {"device": "accinte", "imports": [], "bypass_device_restrictions": false,
     "records": "/path/records.jsonl", "deselect": ["TestFooACCINTE::test_x_accinte"],
     "disabled": {"test_x (__main__.TestFooACCINTE)": ["xfail backend #29: ...", []]}}

Before collection it imports the backend, checks that PyTorch's device-generic
machinery will instantiate it, installs the compatibility names of
pytorch_tests_compat, and names the backend's classes after the device. While
the tests run it appends one JSON line per event to the records file and
flushes it, so that the runner knows which test was running when the process
died: {"event": "start", "id": ...} before a test, {"event": "end", "id": ...,
"outcome": ..., "message": ..., "details": ..., "time": ..., "entry": ...} after
it, {"event": "collected", "ids": [...]} and {"event": "collect_error", ...}.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

import pytest

CONFIG_VARIABLE = "PYTORCH_TESTS_RUNNER_CONFIG"
# Platform words of PyTorch's disabled-tests file this process can answer.
_PLATFORMS = {"linux": sys.platform.startswith("linux"),
              "mac": sys.platform == "darwin", "macos": sys.platform == "darwin",
              "win": sys.platform == "win32", "windows": sys.platform == "win32"}


class _State:
    config: dict = {}
    records = None
    current: dict = {}  # test id -> record being built


def _write(record: dict) -> None:
    _State.records.write(json.dumps(record) + "\n")
    _State.records.flush()


def _test_id(nodeid: str) -> str:
    """`path/test_x.py::TestFooCPU::test_y_cpu` -> `TestFooCPU::test_y_cpu`."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def pytest_configure(config):
    path = os.environ.get(CONFIG_VARIABLE)
    if not path:
        return
    with open(path) as f:
        _State.config = json.load(f)
    _State.records = open(_State.config["records"], "a", buffering=1)
    for name in _State.config.get("imports", []):
        importlib.import_module(name)
    import torch

    device = _State.config["device"]
    if torch._C._get_privateuse1_backend_name() != device:
        raise pytest.UsageError(
            f"the PrivateUse1 backend is called "
            f"{torch._C._get_privateuse1_backend_name()!r}, not {device!r}: import its "
            f"package (--import) or enable autoload")
    import pytorch_tests_compat

    pytorch_tests_compat.install()
    from torch.testing._internal import common_device_type as cdt

    if cdt.PrivateUse1TestBase not in cdt.device_type_test_bases:
        raise pytest.UsageError(
            f"PyTorch's device-generic tests will not be instantiated for {device!r}: "
            f"torch.{device}.is_available() was false when common_device_type was imported")
    # Names the classes TestFooACCINTE rather than TestFooPRIVATEUSE1 in every
    # file, and makes @dtypesIfPRIVATEUSE1 apply: PyTorch looks dtypes up by
    # device_type, which only setUpClass turns into the backend's name.
    cdt.PrivateUse1TestBase.setUpClass()
    cdt.PrivateUse1TestBase.bypass_device_restrictions = bool(
        _State.config.get("bypass_device_restrictions"))


def _matching_entry(item) -> tuple[str, str] | None:
    """The disabled-tests entry (key, reason) that names this test, matched as
    PyTorch's check_if_enable matches them: the class by prefix, the test by its
    name or by its name without the device and dtype suffixes."""
    from torch.testing._internal.common_utils import remove_device_and_dtype_suffixes

    cls = item.cls.__name__ if item.cls is not None else ""
    names = {item.name, remove_device_and_dtype_suffixes(item.name)}
    for key, (reason, platforms) in _State.config.get("disabled", {}).items():
        parts = key.split()
        if len(parts) < 2:
            continue
        target_cls = parts[1][1:-1].split(".")[-1]
        if parts[0] in names and cls.startswith(target_cls):
            if not platforms or any(_PLATFORMS.get(p, False) for p in platforms):
                return key, reason
    return None


def pytest_collection_modifyitems(config, items):
    if not _State.config:
        return
    deselect = set(_State.config.get("deselect", []))
    kept, dropped = [], []
    for item in items:
        (dropped if _test_id(item.nodeid) in deselect else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    for item in items:
        found = _matching_entry(item)
        if found is None:
            continue
        key, reason = found
        item.user_properties.append(("disabled_entry", key))
        if reason.startswith("skip "):
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
    _write({"event": "collected", "ids": [_test_id(item.nodeid) for item in items]})


def pytest_collectreport(report):
    if _State.config and report.failed:
        _write({"event": "collect_error", "id": report.nodeid,
                "details": report.longreprtext[-8000:]})


def pytest_runtest_logstart(nodeid, location):
    if _State.config:
        test_id = _test_id(nodeid)
        _State.current[test_id] = {"event": "end", "id": test_id, "outcome": "passed",
                                   "message": "", "details": "", "time": 0.0,
                                   "started": time.time()}
        _write({"event": "start", "id": test_id})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Waits for the backend's work after each of its tests, so that an error a
    test's kernel reports later (an asynchronous device's data-dependent
    errors) fails that test rather than the next one to synchronize. Runs after
    pytest's own teardown, which must complete for the next test to set up."""
    result = yield
    cls = item.cls.__name__ if item.cls is not None else ""
    device = _State.config.get("device") if _State.config else None
    if device and cls.endswith((device.upper(), "PRIVATEUSE1")):
        import torch

        try:
            getattr(torch, device).synchronize()
        except Exception as error:
            raise RuntimeError(f"the device reported an error at the synchronize after the "
                               f"test: {error}") from error
    return result


def _outcome(report) -> str:
    if hasattr(report, "wasxfail"):
        return "xpassed" if report.passed else "xfailed"
    return report.outcome


def _message(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    if hasattr(report, "wasxfail") and report.wasxfail:
        return str(report.wasxfail)
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return report.longreprtext.strip().splitlines()[-1] if report.longreprtext else ""


def pytest_runtest_logreport(report):
    record = _State.current.get(_test_id(report.nodeid)) if _State.config else None
    if record is None:
        return
    outcome = _outcome(report)
    # A failure in any phase makes the test failed, with the first failure's
    # message; otherwise the call phase decides, or a skip in set-up.
    if record["outcome"] != "failed" and (report.when == "call" or outcome != "passed"):
        record["outcome"] = outcome
        record["message"] = _message(report)[:2000]
        record["details"] = report.longreprtext[-8000:] if report.failed else ""
    for name, value in report.user_properties:
        if name == "disabled_entry":
            record["entry"] = value


def pytest_runtest_logfinish(nodeid, location):
    record = _State.current.pop(_test_id(nodeid), None) if _State.config else None
    if record is not None:
        record["time"] = round(time.time() - record.pop("started"), 4)
        _write(record)
