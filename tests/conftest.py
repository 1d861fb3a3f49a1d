"""Shared fixtures: tests run against the installed torch_accinte.

Tests that need a fresh process (environment variables read once at start-up,
fork, faults) use `run_python`, which runs a script in a process of its own (a
child of the fork server, forkserver.py) and returns the CompletedProcess.

`make test` runs the suite on pytest-xdist workers (`-n 2 --dist loadgroup`): the
groups below decide which tests share a worker process, and in what order the
workers take them; a few tests run alone. `make check` leaves out the files
marked `slow`.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import forkserver

# LITERALINCLUDE START: TESTING WORKER GROUPS
# The files that take a quarter of a minute or more, longest first (seconds on make
# test's workers, 28 November 2026; benchmarks/README.md, "Build and test times").
# `make test`'s workers take them first, so that none starts near the end; `make
# check` leaves them out. The conformance files are quicker, but import PyTorch's
# OpInfo database; the last three are near the line.
SLOW = [
    "tests/test_compile.py",  # 177: Inductor and g++, also in child interpreters
    "tests/test_new_backend.py",  # 118: builds a starter backend with CMake
    "tests/distributed/",  # 116: spawned ranks, two torchrun launches
    "tests/test_examples.py",  # 106: every example in an interpreter of its own
    "tests/integrations/",  # 62: the libraries, each check timed on both devices
    "tests/test_thread_state.py",  # 38: every kernel kind in a child interpreter
    "tests/test_allocator_settings.py",  # 31: each setting in a fresh interpreter
    "tests/test_benchmarks.py",  # 30: each benchmark script once, briefly
    "tests/test_run_pytorch_tests.py",  # 28: the runner on its fixture files, in children
    "tests/test_multiprocessing.py",  # 23: spawned receivers
    "tests/conformance/",  # 20 for test_opinfo.py, 7 and 6 for the dtype and fidelity files
    "tests/test_figures.py",  # 14: the guide's figures from real runs
    "tests/test_device_generic.py",  # 12: PyTorch's test files through the launcher
    "tests/test_autoload.py",  # 11: fresh interpreters
]

# Tests that must share one worker process; every other file is a group of its own
# (its module fixtures are set up once, a session-wide figure sees all its tests).
SHARED_PROCESS = {
    # The ranks harness.py spawns are kept for the session and reused by every file.
    "tests/distributed/": "distributed",
    # The session writes build/ecosystem.json, and test_table.py needs every row of it.
    "tests/integrations/": "integrations",
}


# Tests that bound a duration from above (the bound), by node id or a prefix of it
# (a whole file): on make test's workers each runs alone (pytest_runtest_protocol
# below), so that the other worker's load cannot stretch it.
ALONE = [
    "tests/accinte_runtime/test_launch_queue.py",  # a record into a full queue: 0.4 s
    # waits on a dead exporter end: 5 s
    "tests/accinte_runtime/test_ipc_event.py::test_an_exporter_that_dies_does_not_hang",
    # a dead peer fails the collective: 15 s. The whole file: its ranks' gloo
    # rendezvous failed beside the other worker's tests when only that test ran alone.
    "tests/distributed/test_shm_engine.py",
]
# LITERALINCLUDE END: TESTING WORKER GROUPS


def pytest_configure(config):
    if _on_worker(config) and "OMP_NUM_THREADS" not in os.environ:
        # The workers share the cores: one intra-op thread each, for the CPU's
        # kernels and accinte's alike (tests that need more set them), and for
        # the interpreters the tests start. With two, the dtype-refusal file
        # took a tenth more CPU time even alone.
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch

        torch.set_num_threads(1)
    if _on_worker(config) and config.option.basetemp and \
            "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        # One Inductor cache for the run, which both workers and every interpreter
        # they start share: cold at the start, as on a fresh machine (the default,
        # /tmp/torchinductor_<user>, outlives runs), warm within the run.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(
            Path(config.option.basetemp).parent / "inductor-cache")
    config.addinivalue_line(
        "markers",
        "not_under_sanitizer(reason): skipped by `make sanitize` (tools/sanitize.sh sets "
        "ACCINTE_SANITIZER=1) for the reason given; listed in docs/chapters/testing.md")
    config.addinivalue_line(
        "markers", "slow: a file of conftest.SLOW (15 s or more); `make check` deselects it")


def _path(item) -> str:
    return item.nodeid.split("::")[0]


def _group(path: str) -> str:
    """The group of a test file: its SHARED_PROCESS group, else the file."""
    return next((group for prefix, group in SHARED_PROCESS.items() if path.startswith(prefix)),
                path)


def _on_worker(config) -> bool:
    """Whether this process is a pytest-xdist worker (not the controller, and not a
    pytest a test starts, which inherits the worker's environment)."""
    return hasattr(config, "workerinput")


def _slow_rank(path: str) -> int:
    """The file's place in SLOW; len(SLOW) for the rest."""
    return next((i for i, prefix in enumerate(SLOW) if path.startswith(prefix)), len(SLOW))


def pytest_ignore_collect(collection_path, config):
    """Under `-m "not slow"` (make check), the SLOW files are not even imported:
    their imports (Inductor, PyTorch's OpInfo database) cost each worker seconds."""
    if config.option.markexpr.replace(" ", "") != "notslow" or \
            not collection_path.is_relative_to(config.rootpath):
        return None
    path = collection_path.relative_to(config.rootpath).as_posix()
    path += "/" if collection_path.is_dir() else ""
    return True if _slow_rank(path) < len(SLOW) else None


@pytest.hookimpl(tryfirst=True)  # marks `slow` before -m deselects
def pytest_collection_modifyitems(config, items):
    """In one process, the OpInfo conformance suite runs last: it is two thirds
    of the tests, so the mechanisms' own tests report first. On make test's workers (xdist), the SLOW files
    come first, longest first: the workers take the groups in this order.
    Either way the integration suite's table check follows the rest of that suite.
    Under the sanitizer, tests marked not_under_sanitizer skip with their reason."""
    on_workers = _on_worker(config)
    items.sort(key=lambda item: (_slow_rank(_path(item)) if on_workers else 0,
                                 "conformance" in item.nodeid,
                                 "integrations/test_table.py" in item.nodeid))
    for item in items:
        if _slow_rank(_path(item)) < len(SLOW):
            item.add_marker(pytest.mark.slow)
    if os.environ.get("ACCINTE_SANITIZER") == "1":
        for item in items:
            for mark in item.iter_markers("not_under_sanitizer"):
                item.add_marker(pytest.mark.skip(reason=f"under make sanitize: {mark.args[0]}"))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which may be absent
def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadgroup`, a worker takes one group of _group() at a time, in
    the order the workers collected them (with --no-loadscope-reorder). The groups
    come from the paths, not from xdist_group marks: xdist 3.8 puts a mark's group
    into the test's node id, which pytest 9 no longer lets a plugin change."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class PathGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid.split("::")[0])

    return PathGroups(config, log)


_locks: dict[str, object] = {}


def _lock(config, name: str):
    """This worker's handle on the lock file `name` of the run, in the folder every
    worker's temporary directory is made in (the controller's basetemp)."""
    if name not in _locks:
        _locks[name] = open(Path(config.option.basetemp).parent / f"{name}.lock", "a")
    return _locks[name]


# LITERALINCLUDE START: TESTING WORKER LOCK
@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """On workers, an ALONE test (setup, call and teardown) runs while no other
    test does: a readers-writer lock over two files. Every test enters the
    `room` shared, passing the `gate` on its way in; an ALONE test shuts the
    gate, so that no test enters after it, and waits for the room to itself."""
    if not _on_worker(item.config):
        return (yield)
    gate, room = _lock(item.config, "gate"), _lock(item.config, "room")
    alone = any(item.nodeid.startswith(prefix) for prefix in ALONE)
    fcntl.flock(gate, fcntl.LOCK_EX)
    if alone:
        fcntl.flock(room, fcntl.LOCK_EX)
    else:
        fcntl.flock(room, fcntl.LOCK_SH)
        fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        return (yield)
    finally:
        fcntl.flock(room, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
# LITERALINCLUDE END: TESTING WORKER LOCK


@pytest.fixture
def run_python():
    """run(source, env=None, timeout=120, fresh=False): `python -c source` with
    this process's environment updated by `env`; returns the CompletedProcess.
    It runs in a child of a fork server that has imported torch
    (forkserver.py), as a program in a fresh interpreter would; `fresh=True`
    starts a fresh interpreter, for a test of what `import torch` itself does."""
    def run(source: str, env: dict[str, str] | None = None, timeout: float = 120,
            fresh: bool = False):
        full_env = dict(os.environ)
        full_env.update(env or {})
        if fresh:
            return subprocess.run([sys.executable, "-c", textwrap.dedent(source)],
                                  env=full_env, capture_output=True, text=True, timeout=timeout)
        return forkserver.run_python(["-c"], textwrap.dedent(source), full_env, timeout)

    return run
