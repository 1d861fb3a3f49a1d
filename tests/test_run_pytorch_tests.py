"""tools/run_pytorch_tests.py on the small PyTorch-style test files of
tests/pytorch_tests_fixture/: a device-generic file whose tests pass, fail only
on the device, fail everywhere, abort the process on the device, leave an
asynchronous error pending, are skipped or expected to fail through the disabled-tests file; a file that outlasts its
budget; a file whose collection fails. One run of the runner over the three
(module fixture), then its table, JUnit XML, crash handling and baseline diff;
the parts that need no child process (typed reasons, twins, rounding) directly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "pytorch_tests_fixture"
sys.path.insert(0, str(REPO / "tools"))

from pytorch_tests import disabled, execute, pairing, report  # noqa: E402

GENERIC = "test_tiny_device_generic.py"
DEVICE = "TestTinyACCINTE::"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pytorch-tests")
    baseline = out / "baseline.json"
    # The baseline knows one failure of this run and one that no longer fails.
    baseline.write_text(json.dumps({"device": "accinte", "files": {GENERIC: {
        "device_only": [DEVICE + "test_fails_on_device_accinte",
                        DEVICE + "test_add_accinte_float32"], "cpu_only": []}}}))
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "run_pytorch_tests.py"), str(FIXTURE),
         GENERIC, "test_tiny_slow.py", "test_tiny_broken.py",
         "--disabled-tests", str(FIXTURE / "disabled_tests.json"), "--out", str(out),
         "--budget", "120", "--file-budget", "test_tiny_slow.py=8",
         "--baseline", str(baseline), "--write-baseline", str(out / "new-baseline.json")],
        capture_output=True, text=True, timeout=300)
    return result, out


def _rows(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells
    return rows


def test_table_has_a_row_per_file_with_the_pairs_counted(run):
    result, _ = run
    assert result.returncode == 1, result.stdout + result.stderr  # new failure, files not ok
    rows = _rows(result.stdout)
    assert list(rows)[0] == "file" and set(rows) >= {GENERIC, "test_tiny_slow.py",
                                                     "test_tiny_broken.py", "**total**"}
    header = rows["file"]
    row = dict(zip(header, rows[GENERIC]))
    # Paired: test_add (2 dtypes), test_sum, test_fails_on_device, test_crashes_on_device,
    # test_leaves_an_error_pending, test_fails_everywhere; three documented; the skipped
    # and device-only ones unpaired, one of which fails.
    assert row == {**row, "paired": "7", "device-only failures": "3", "CPU-only failures": "0",
                   "both fail": "1", "unpaired failures": "1", "documented": "3",
                   "crashed": "1", "agreement": "57.14%", "status": "ok"}
    assert rows["test_tiny_slow.py"][header.index("status")].startswith("out of time")
    broken = rows["test_tiny_broken.py"][header.index("status")]
    assert broken.startswith("collection error: ImportError") and "no_such_helper" in broken


def test_disagreements_and_removable_entries_are_listed(run):
    out = run[0].stdout
    assert (f"{GENERIC}::{DEVICE}test_fails_on_device_accinte: failed on the device, "
            "passed on the CPU: AssertionError") in out
    assert f"{GENERIC}::{DEVICE}test_crashes_on_device_accinte: crashed on the device" in out
    assert f"passes now, remove its entry: {GENERIC}::{DEVICE}test_documented_but_passes" in out
    assert (f"{GENERIC}::{DEVICE}test_device_only_fails_accinte: failed on the device, "
            "skipped on the CPU: AssertionError: fails with no CPU twin") in out
    assert "test_fails_everywhere" not in out  # fails on both: the pair agrees


def test_an_error_left_pending_fails_the_test_that_left_it(run):
    _, out = run
    results = {r["file"]: r for r in json.loads((out / "results.json").read_text())}
    failures = {d["test_id"]: d["message"] for d in results[GENERIC]["device_only"]}
    message = failures[DEVICE + "test_leaves_an_error_pending_accinte"]
    assert message.startswith("RuntimeError: the device reported an error at the synchronize "
                              "after the test") and "aten::gather" in message
    assert sorted(failures) == [DEVICE + "test_crashes_on_device_accinte",
                                DEVICE + "test_fails_on_device_accinte",
                                DEVICE + "test_leaves_an_error_pending_accinte"]


def test_a_crash_is_reported_and_the_rest_of_the_file_runs(run):
    _, out = run
    suites = {s.get("name"): s for s in ET.parse(out / "junit.xml").getroot()}
    cases = {f"{c.get('classname').split('.')[-1]}::{c.get('name')}": c
             for c in suites["test_tiny_device_generic"]}
    # Every test of both classes has a result: the file was rerun past the crash.
    assert len(cases) == 26, sorted(cases)
    crash = cases[DEVICE + "test_crashes_on_device_accinte"].find("error")
    assert crash.get("type") == "crash" and "SIGABRT" in crash.get("message")
    assert cases["TestTinyCPU::test_crashes_on_device_cpu"].find("error") is None
    failure = cases[DEVICE + "test_fails_on_device_accinte"].find("failure")
    assert failure.get("message").startswith("device-only failure (the CPU twin passes)")
    log = (out / "logs" / "test_tiny_device_generic.log").read_text()
    assert log.count("===== child") == 2


def test_junit_carries_skips_expected_failures_and_file_errors(run):
    _, out = run
    suites = {s.get("name"): s for s in ET.parse(out / "junit.xml").getroot()}
    cases = {c.get("name"): c for c in suites["test_tiny_device_generic"]}
    skipped = cases["test_disabled_crash_accinte"].find("skipped").get("message")
    assert "skip backend #29: aborts the process" in skipped
    expected = cases["test_documented_failure_accinte"].find("skipped").get("message")
    assert expected.startswith("expected failure: xfail assumes-cpu")
    assert cases["test_sum_accinte"].find("skipped") is None  # skipIfMps, from the shims
    for name, words in (("test_tiny_slow", "out of time"),
                        ("test_tiny_broken", "collection error")):
        error = {c.get("name"): c for c in suites[name]}["file"].find("error")
        assert words in error.get("message")
    generic = suites["test_tiny_device_generic"]
    assert (generic.get("tests"), generic.get("errors")) == ("26", "1")


def test_baseline_diff_and_written_baseline(run):
    result, out = run
    assert f"new: {GENERIC}::{DEVICE}test_crashes_on_device_accinte" in result.stdout
    assert f"fixed: {GENERIC}::{DEVICE}test_add_accinte_float32" in result.stdout
    assert f"new: {GENERIC}::{DEVICE}test_fails_on_device_accinte" not in result.stdout
    assert f"new: {GENERIC}::{DEVICE}test_device_only_fails_accinte" in result.stdout
    written = json.loads((out / "new-baseline.json").read_text())
    assert written["files"][GENERIC] == {
        "device_only": [DEVICE + "test_crashes_on_device_accinte",
                        DEVICE + "test_fails_on_device_accinte",
                        DEVICE + "test_leaves_an_error_pending_accinte"], "cpu_only": [],
        "unpaired": [DEVICE + "test_device_only_fails_accinte"]}
    results = json.loads((out / "results.json").read_text())
    assert [r["file"] for r in results] == [GENERIC, "test_tiny_slow.py", "test_tiny_broken.py"]


@pytest.mark.parametrize("reason, error", [
    ("xfail assumes-cpu: fine", None),
    ("skip backend #29: fine", None),
    ("xfail backend https://github.com/o/r/issues/3: fine", None),
    ("xfail backend: no issue", "names its issue"),
    ("maybe assumes-cpu: text", "action 'maybe'"),
    ("skip assumes-tpu: text", "kind 'assumes-tpu'"),
    ("skip assumes-cuda #3: text", "only a backend limitation"),
    ("https://github.com/pytorch/pytorch/issues/1", "is not 'ACTION KIND"),
])
def test_typed_reasons(tmp_path, reason, error):
    path = tmp_path / "disabled.json"
    path.write_text(json.dumps({"test_a_accinte (__main__.TestAACCINTE)": [reason, []]}))
    if error is None:
        (entry,) = disabled.load(path)
        assert entry.reason == reason
    else:
        with pytest.raises(ValueError, match=error):
            disabled.load(path)


def test_twin_names():
    assert pairing.twin("TestFooACCINTE::test_bar_accinte_float32", "accinte") == \
        "TestFooCPU::test_bar_cpu_float32"
    assert pairing.twin("TestFooPRIVATEUSE1::test_x_accinte_complex64_float32", "accinte") == \
        "TestFooCPU::test_x_cpu_complex64_float32"
    assert pairing.twin("TestFooCPU::test_bar_cpu", "accinte") is None


def test_a_file_whose_pairs_all_fail_is_not_ok(tmp_path):
    run = execute.FileRun("test_x.py", results={
        f"TestX{cls}::test_a_{dev}": {"outcome": "failed", "message": "RecursionError"}
        for cls, dev in (("CPU", "cpu"), ("ACCINTE", "accinte"))})
    summary = pairing.summarise(run, "accinte")
    assert (summary.paired, summary.agreement) == (1, 100.0)
    assert summary.status == "all 1 pairs fail on both devices"


def test_agreement_is_never_rounded_up():
    assert report._percent(99996, 100000) == "99.99%"
    assert report._percent(3, 3) == "100.00%"


def test_a_2023_setup_calling_super_of_its_class_runs(tmp_path):
    # test_linalg.py's setUp: super(self.__class__, self).setUp() recursed in
    # every test on both devices before the shim (pytorch_tests_compat.WRAPS).
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "run_pytorch_tests.py"), str(FIXTURE),
         "test_tiny_super_of_class.py", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    row = dict(zip(rows["file"], rows["test_tiny_super_of_class.py"]))
    assert row == {**row, "paired": "2", "device-only failures": "0", "CPU-only failures": "0",
                   "both fail": "0", "agreement": "100.00%", "status": "ok"}
