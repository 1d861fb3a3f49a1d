"""A fork server for the robustness suite: one case per forked child.

Starting an interpreter and importing torch costs seconds, far too much per
case, and a case that crashes or hangs must fail alone. So the suite starts
this program once (`ForkServer`): it imports torch, which autoloads
torch_accinte, but never initialises the device; it then forks one child per
case. The child initialises the device afresh (a child forked before the
runtime was in use gets a runtime of its own), runs the case and the device
check, and exits. The server reports how the child ended: exit code, signal,
timeout, and what it printed.

Protocol: the client writes one JSON object per line on the server's stdin,
``{"source": ..., "timeout": seconds}``; the server answers one line on its
stdout, ``{"returncode": int, "signal": int, "timed_out": bool, "output": str}``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

# Run in every child before the case: the helpers cases are written with.
PRELUDE = '''
import gc, os, re, sys, threading, time
import torch

def raises(exc, fn, match=None):
    """fn() must raise `exc` (whose message matches `match`); returns it."""
    try:
        fn()
    except exc as e:
        if match is not None:
            assert re.search(match, str(e)), f"message {str(e)!r} does not match {match!r}"
        return e
    except BaseException as e:
        raise AssertionError(f"expected {exc.__name__}, got {type(e).__name__}: {e}") from e
    raise AssertionError(f"expected {exc.__name__}, nothing was raised")

def outcome(fn, device):
    """('raised', type) or ('returned', value on the CPU) of fn(device)."""
    try:
        value = fn(device)
    except Exception as e:
        return ("raised", type(e), str(e))
    if isinstance(value, torch.Tensor):
        value = value.cpu()
    return ("returned", value)

def same_as_cpu(fn):
    """fn("accinte") behaves as fn("cpu"): raises the same exception type,
    or returns an equal result (exactly, tensors compared by torch.equal)."""
    cpu, acc = outcome(fn, "cpu"), outcome(fn, "accinte")
    assert cpu[0] == acc[0], f"CPU {cpu}, accinte {acc}"
    if cpu[0] == "raised":
        assert cpu[1] is acc[1], f"CPU raised {cpu[1].__name__}: {cpu[2]}; accinte raised {acc[1].__name__}: {acc[2]}"
    elif isinstance(cpu[1], torch.Tensor):
        assert cpu[1].dtype == acc[1].dtype and torch.equal(cpu[1], acc[1]), f"CPU {cpu[1]}, accinte {acc[1]}"
    else:
        assert cpu[1] == acc[1], f"CPU {cpu[1]}, accinte {acc[1]}"
    return cpu

def device_works():
    """The device still computes, copies, allocates and synchronizes."""
    for index in range(torch.accinte.device_count()):
        x = torch.arange(6.0, device=f"accinte:{index}").reshape(2, 3)
        assert (x * 2 + 1).sum().item() == 36.0
        assert torch.equal((x @ x.T).cpu(), torch.arange(6.0).reshape(2, 3) @ torch.arange(6.0).reshape(2, 3).T)
        torch.accinte.synchronize(index)

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
'''

EPILOGUE = '''
device_works()
'''


def _run_case(source: str, timeout: float) -> dict:
    with tempfile.TemporaryFile(mode="w+b") as out:
        pid = os.fork()
        if pid == 0:  # the child: its own process group, so a timeout kills its forks too
            code = 1
            try:
                os.setpgid(0, 0)
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                sys.stdout = os.fdopen(1, "w", buffering=1)
                sys.stderr = sys.stdout
                scope = {"__name__": "__case__"}
                exec(compile(PRELUDE + textwrap.dedent(source) + EPILOGUE, "<case>", "exec"), scope)
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        status = None
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
            elif time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                out.seek(0)
                return {"returncode": -1, "signal": signal.SIGKILL, "timed_out": True,
                        "output": out.read().decode(errors="replace")[-20000:]}
            else:
                time.sleep(0.002)
        try:  # grandchildren a case left behind
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out.seek(0)
        return {"returncode": os.waitstatus_to_exitcode(status),
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                "timed_out": False, "output": out.read().decode(errors="replace")[-20000:]}


def serve() -> None:
    import torch  # noqa: F401  (autoloads torch_accinte; the device stays uninitialised)

    # What the first operator on any device imports (seconds' worth): once,
    # here, rather than in every child.
    import torch._dynamo  # noqa: F401
    import torch.fx.experimental.symbolic_shapes  # noqa: F401
    import gc

    # Everything imported so far is never garbage: children skip it in their
    # collections (which would otherwise also copy every page it lives on).
    gc.freeze()

    requests, replies = sys.stdin, os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the protocol
    for line in requests:
        request = json.loads(line)
        replies.write(json.dumps(_run_case(request["source"], request["timeout"])) + "\n")


@dataclass
class CaseResult:
    returncode: int
    signal: int
    timed_out: bool
    output: str

    def describe(self) -> str:
        how = ("timed out (killed)" if self.timed_out else
               f"killed by signal {self.signal}" if self.signal else f"exit code {self.returncode}")
        return f"the case {how}; its output:\n{self.output}"


class ForkServer:
    """Client side: starts the server, runs cases in it, restarts it if it died."""

    def __init__(self, env: dict[str, str] | None = None):
        self._env = dict(os.environ, **(env or {}))
        self._process: subprocess.Popen | None = None

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=self._env, text=True, bufsize=1)

    def run(self, source: str, timeout: float = 30.0) -> CaseResult:
        if self._process is None or self._process.poll() is not None:
            self._start()
        self._process.stdin.write(json.dumps({"source": source, "timeout": timeout}) + "\n")
        self._process.stdin.flush()
        ready, _, _ = select.select([self._process.stdout], [], [], timeout + 60)
        if not ready:
            self.close()
            raise RuntimeError("the fork server stopped answering")
        return CaseResult(**json.loads(self._process.stdout.readline()))

    def check(self, source: str, timeout: float = 30.0) -> CaseResult:
        """Runs a case; fails the calling test unless the child exited 0."""
        result = self.run(source, timeout)
        assert result.returncode == 0 and not result.timed_out, result.describe()
        return result

    def close(self) -> None:
        """Stops the server (it holds no state worth an orderly exit)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process.stdin.close()
            self._process.stdout.close()
            self._process = None


if __name__ == "__main__":
    serve()
