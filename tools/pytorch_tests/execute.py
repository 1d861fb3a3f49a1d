"""One test file in child processes: pytest with the runner's plugin, a time
budget for the whole file, and the rest of the file rerun after a crash.

A child appends a record per test to a JSON-lines file and flushes it (see
child/pytorch_tests_plugin.py). When a child dies with a test started and not
finished, that test crashed: it is recorded with the signal or exit status,
and a new child runs the file again with the crashed test and every finished
test deselected. The budget covers all children of the file; when it runs out
the child's process group is killed and the file is reported as out of time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CHILD_DIR = Path(__file__).resolve().parent / "child"
# pytest's own exit statuses; any other status with a test unfinished is a crash.
PYTEST_EXIT = {0: "ok", 1: "tests failed", 2: "interrupted", 3: "internal error",
               4: "usage error", 5: "no tests collected"}


@dataclass
class Options:
    """What every child of a run shares."""
    test_dir: Path
    out_dir: Path
    device: str = "accinte"
    imports: tuple[str, ...] = ()
    disabled: dict = field(default_factory=dict)  # PyTorch's form, see disabled.py
    budget: float = 1800.0                         # seconds per file
    file_budgets: dict = field(default_factory=dict)  # file -> seconds, instead of budget
    max_crashes: int = 20                          # per file
    bypass_device_restrictions: bool = False
    pytest_args: tuple[str, ...] = ()
    python: str = sys.executable


@dataclass
class FileRun:
    """What the children of one file left: one record per finished test."""
    file: str
    results: dict[str, dict] = field(default_factory=dict)  # test id -> end record
    crashed: dict[str, str] = field(default_factory=dict)   # test id -> how it died
    collected: list[str] = field(default_factory=list)
    timed_out_at: str | None = None   # the test running when the budget ran out
    error: str = ""                   # why the file did not run to its end
    elapsed: float = 0.0
    children: int = 0
    log: str = ""                     # the children's pytest output

    @property
    def not_run(self) -> list[str]:
        return [t for t in self.collected if t not in self.results and t not in self.crashed]


def _describe_status(status: int) -> str:
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exited with status {status}"


def _environment(options: Options, config_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(CHILD_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["PYTORCH_TESTS_RUNNER_CONFIG"] = str(config_path)
    # Only the CPU and the backend are instantiated (no CUDA, no meta or lazy).
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = f"cpu,{options.device}"
    env.pop("PYTORCH_TESTING_DEVICE_EXCEPT_FOR", None)
    env.pop("DISABLED_TESTS_FILE", None)  # skips come from the runner's file only
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the PyTorch tree
    env["PYTORCH_PRINT_REPRO_ON_FAILURE"] = "0"  # messages without the rerun advice
    # instantiate_device_type_tests walks a set of names: with string hashing
    # fixed, tests run in the same order in every run, so that an error a test
    # leaves pending surfaces in the same next test each time.
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def _command(options: Options, work: Path, test_file: Path) -> list[str]:
    ini = work / "pytest.ini"
    ini.write_text("[pytest]\n")  # the tree's own ini and conftest.py are not read
    return [options.python, "-m", "pytest", "-p", "pytorch_tests_plugin", "--noconftest",
            "-p", "no:cacheprovider", "-c", str(ini), "--rootdir", str(options.test_dir),
            "-q", "-o", "console_output_style=classic", *options.pytest_args, str(test_file)]


def _read_records(path: Path, run: FileRun) -> str | None:
    """Merges a child's records into `run`; returns the test it started and did
    not finish, if any."""
    started = None
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a child killed while writing it
        if record["event"] == "start":
            started = record["id"]
        elif record["event"] == "end":
            run.results[record["id"]] = record
            started = None if started == record["id"] else started
        elif record["event"] == "collected" and not run.collected:
            run.collected = record["ids"]
        elif record["event"] == "collect_error":
            errors = [line[1:].strip() for line in record["details"].splitlines()
                      if line.startswith("E ")]
            what = errors[-1] if errors else "see the log"
            run.error = f"collection error: {what}\n{record['details']}"
    return started


def _run_child(options: Options, run: FileRun, work: Path, log, deadline: float):
    """One child over what is left of the file. Returns (status, unfinished test),
    status None when the budget ran out."""
    run.children += 1
    records = work / f"records-{run.children}.jsonl"
    config = work / f"config-{run.children}.json"
    config.write_text(json.dumps({
        "device": options.device, "imports": list(options.imports),
        "bypass_device_restrictions": options.bypass_device_restrictions,
        "records": str(records), "disabled": options.disabled,
        "deselect": sorted(set(run.results) | set(run.crashed))}))
    log.write(f"\n===== child {run.children}\n")
    log.flush()
    child = subprocess.Popen(_command(options, work, options.test_dir / run.file),
                             cwd=options.test_dir, env=_environment(options, config),
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(child)
        status = None
    except BaseException:  # interrupted: the child (its own session) goes too
        _kill_group(child)
        raise
    return status, _read_records(records, run)


def _kill_group(child: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 30)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_file(options: Options, file: str) -> FileRun:
    """Runs one test file of options.test_dir to its end, through crashes, within
    its budget."""
    run = FileRun(file)
    work = options.out_dir / "work" / Path(file).stem
    work.mkdir(parents=True, exist_ok=True)
    for old in work.glob("records-*.jsonl"):
        old.unlink()
    start = time.monotonic()
    deadline = start + options.file_budgets.get(file, options.budget)
    run.log = str(options.out_dir / "logs" / f"{Path(file).stem}.log")
    Path(run.log).parent.mkdir(parents=True, exist_ok=True)
    with open(run.log, "w") as log:
        while True:
            status, unfinished = _run_child(options, run, work, log, deadline)
            if status is None:
                run.timed_out_at = unfinished or ""
                break
            if unfinished is not None:
                run.crashed[unfinished] = _describe_status(status)
                if len(run.crashed) >= options.max_crashes:
                    run.error = f"stopped after {len(run.crashed)} crashes"
                    break
                continue
            if status < 0 or status not in PYTEST_EXIT:
                run.error = run.error or f"the child {_describe_status(status)} between tests"
            elif status in (2, 3, 4) and not run.error:
                run.error = f"pytest: {PYTEST_EXIT[status]} (see the log)"
            break
    run.elapsed = time.monotonic() - start
    return run
