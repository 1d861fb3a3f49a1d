"""Runs a test function on two spawned ranks, as `torchrun --nproc-per-node=2` would.

    from distributed import harness

    def _sum(rank):                       # module level: the ranks import it by name
        harness.init("accl")              # this task's rendezvous, rank `rank`
        t = torch.full((3,), rank + 1.0, device=harness.device())
        dist.all_reduce(t)
        return t.cpu()                    # plain data or CPU tensors only

    def test_sum():
        assert all(r.tolist() == [3.0] * 3 for r in harness.run(_sum))

`run(fn, *args)` calls `fn(rank, *args)` on every rank and returns the results in rank
order. A rank that raises fails the test with its own traceback (and the other ranks'
tracebacks, if they fail too); a task that does not finish within `timeout` seconds fails
the test with the stacks of the ranks still running (faulthandler), never a hang.

Spawning a rank imports torch (seconds), so ranks are kept between tasks: one pool of
ranks per set of extra environment variables (`env=`), reused by every test of the session
that asks for the same set. `fresh=True` gives a task ranks of its own, ended after it
(for tasks that kill a rank on purpose: `exit_now`). Any failure ends the pool, so the
next task starts on new ranks.

Everything is loopback: every task gets a fresh `FileStore` file (`init` uses it) and a
free port on 127.0.0.1 in MASTER_ADDR/MASTER_PORT (for `env://`, torchrun's way), and
Gloo is pinned to `lo` (GLOO_SOCKET_IFNAME). Rank r uses `accinte:r`. A group left
initialised by a task is destroyed after it.
"""

from __future__ import annotations

import atexit
import datetime
import faulthandler
import multiprocessing
import os
import queue
import socket
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

WORLD_SIZE = 2
TIMEOUT = 60.0  # seconds for one task on all ranks, from the moment it is sent
GROUP_TIMEOUT = datetime.timedelta(seconds=20)  # a collective's timeout inside a task
_GRACE = 3.0  # once a rank failed: how long to wait for the others' reports

# ---- inside a rank ----------------------------------------------------------------------

_task: dict[str, Any] = {}  # the running task's rendezvous, in the rank's process


def rank() -> int:
    """This rank's number (inside a task)."""
    return _task["rank"]


def world_size() -> int:
    """The number of ranks of the running task."""
    return _task["world_size"]


def device():
    """`accinte:<rank>`, this rank's device."""
    import torch

    return torch.device("accinte", _task["rank"])


def init(backend: str | None = "accl", *, timeout: datetime.timedelta = GROUP_TIMEOUT,
         **kwargs):
    """`dist.init_process_group` on a FileStore of this task as rank `rank()` (a new file at
    each call, so a task may init again after destroying or aborting its group).

    `backend=None` leaves the choice to PyTorch (with `device_id=` or bare); other keyword
    arguments go to init_process_group unchanged.
    """
    import torch.distributed as dist

    if backend is not None:
        kwargs["backend"] = backend
    _task["inits"] += 1
    store = f"{_task['store']}.{_task['inits']}"
    dist.init_process_group(init_method="file://" + store, rank=_task["rank"],
                            world_size=_task["world_size"], timeout=timeout, **kwargs)


def exit_now(code: int = 0) -> None:
    """Ends this rank at once (os._exit, no clean-up), reporting `("exited", code)` as its
    result first: how a fault test kills a peer. Use with `run(..., fresh=True)`."""
    _task["outbox"].put((_task["rank"], "exited", code))
    _task["outbox"].close()
    _task["outbox"].join_thread()
    os._exit(code)


def _run_task(rank_: int, world_size_: int, outbox, task) -> None:
    fn, args, store, port, timeout = task
    import torch.distributed as dist

    _task.update(rank=rank_, world_size=world_size_, store=store, outbox=outbox, inits=0)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank_),
                      LOCAL_RANK=str(rank_), WORLD_SIZE=str(world_size_))
    # Stacks of a hung rank reach the test's output before the parent kills it.
    faulthandler.dump_traceback_later(max(timeout - 1.0, 1.0), exit=False)
    try:
        result = fn(rank_, *args)
        report = (rank_, "ok", result)
    except BaseException:  # noqa: BLE001 - the parent reports it
        report = (rank_, "failed", traceback.format_exc())
    finally:
        faulthandler.cancel_dump_traceback_later()
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001
        if report[1] == "ok":
            report = (rank_, "failed", "destroy_process_group after the task failed:\n" +
                      traceback.format_exc())
    try:
        outbox.put(report)
    except Exception:  # noqa: BLE001 - an unpicklable result
        outbox.put((rank_, "failed", "the result could not be sent back:\n" +
                    traceback.format_exc()))


def _rank_main(rank_: int, world_size_: int, inbox, outbox, env: dict[str, str]) -> None:
    os.environ.update(env)
    import torch

    torch.accinte.set_device(rank_)
    parent = os.getppid()
    while True:
        try:
            task = inbox.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent:  # the test process died: do not linger
                return
            continue
        if task is None:
            return
        _run_task(rank_, world_size_, outbox, task)


# ---- in the test process ------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RankFailure(AssertionError):
    """A task failed or timed out on at least one rank; the message holds every report."""


class _Pool:
    def __init__(self, env: dict[str, str], world_size_: int):
        ctx = multiprocessing.get_context("spawn")
        self.world_size = world_size_
        self.outbox = ctx.Queue()
        self.inboxes = [ctx.Queue() for _ in range(world_size_)]
        full_env = {"GLOO_SOCKET_IFNAME": "lo", **env}
        self.ranks = [ctx.Process(target=_rank_main, name=f"rank{r}", daemon=True,
                                  args=(r, world_size_, self.inboxes[r], self.outbox, full_env))
                      for r in range(world_size_)]
        for p in self.ranks:
            p.start()
        self._dir = tempfile.TemporaryDirectory(prefix="accl-test-")
        self._tasks = 0

    def run(self, fn: Callable, args: tuple, timeout: float) -> list[Any]:
        self._tasks += 1
        store = os.path.join(self._dir.name, f"store{self._tasks}")
        task = (fn, args, store, free_port(), timeout)
        for inbox in self.inboxes:
            inbox.put(task)
        reports: dict[int, tuple[str, Any]] = {}
        deadline = time.monotonic() + timeout
        failed_at = None
        while len(reports) < self.world_size:
            now = time.monotonic()
            limit = deadline if failed_at is None else min(deadline, failed_at + _GRACE)
            if now >= limit:
                break
            try:
                r, status, value = self.outbox.get(timeout=min(limit - now, 0.5))
            except queue.Empty:
                dead = [p for p in self.ranks if p.exitcode is not None and
                        int(p.name[4:]) not in reports]
                for p in dead:  # died without a report: a crash
                    reports[int(p.name[4:])] = ("failed", f"exited with code {p.exitcode} "
                                                "without reporting (crash?)")
                    failed_at = failed_at or time.monotonic()
                continue
            reports[r] = (status, value)
            if status == "failed" and failed_at is None:
                failed_at = time.monotonic()
        ok = len(reports) == self.world_size and all(s != "failed" for s, _ in reports.values())
        if ok:
            return [reports[r][1] if reports[r][0] == "ok" else reports[r]
                    for r in range(self.world_size)]
        lines = [f"{getattr(fn, '__qualname__', fn)} failed on {self.world_size} ranks:"]
        for r in range(self.world_size):
            if r not in reports:
                lines.append(f"--- rank {r}: no report within {timeout:.0f} s (hung; its "
                             "stacks, if any, are in the captured stderr)")
            else:
                status, value = reports[r]
                lines.append(f"--- rank {r}: {status}\n{value if status != 'ok' else ''}")
        raise RankFailure("\n".join(lines))

    def close(self, kill: bool = False) -> None:
        if not kill:
            for inbox in self.inboxes:
                inbox.put(None)
            for p in self.ranks:
                p.join(5)
        for p in self.ranks:
            if p.is_alive():
                p.kill()
                p.join(5)
        self._dir.cleanup()


_pools: dict[tuple, _Pool] = {}


def run(fn: Callable, *args, env: dict[str, str] | None = None, timeout: float = TIMEOUT,
        fresh: bool = False, world_size: int = WORLD_SIZE) -> list[Any]:
    """Runs `fn(rank, *args)` on `world_size` spawned ranks; returns their results in rank
    order (a rank that called `exit_now(code)` gives `("exited", code)`). Raises RankFailure
    with every rank's traceback if one raised, crashed or did not finish in `timeout`
    seconds. `env` is added to each rank's environment at start-up (ranks are kept per
    `env`; see the module docstring), `fresh=True` runs on ranks of its own."""
    key = (tuple(sorted((env or {}).items())), world_size)
    pool = _Pool(env or {}, world_size) if fresh else _pools.get(key)
    if pool is None:
        pool = _pools[key] = _Pool(env or {}, world_size)
    try:
        results = pool.run(fn, args, timeout)
    except BaseException:
        _pools.pop(key, None) if not fresh else None
        pool.close(kill=True)
        raise
    if fresh:
        pool.close(kill=any(isinstance(r, tuple) and r[:1] == ("exited",) for r in results))
    return results


@atexit.register
def _close_pools() -> None:
    for pool in _pools.values():
        pool.close()
    _pools.clear()


if __name__ == "__main__":
    sys.exit("harness.py is imported by the tests in tests/distributed/")
