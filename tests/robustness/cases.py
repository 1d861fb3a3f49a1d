"""The robustness suite's cases, one per forked child.

A case that crashes or hangs must fail alone, so each runs in a process of
its own: a child of the fork server (tests/forkserver.py), which has imported
torch once. The case's source follows PRELUDE (the helpers cases are written
with) and is followed by EPILOGUE (the device check); `Cases.check` fails the
calling test unless the child exited 0 within its time-out.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from forkserver import ForkServer  # noqa: E402

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


class Cases:
    """One fork server for the suite (tests/forkserver.py): it imports torch,
    which autoloads torch_accinte without initialising the device, and what the
    first operator on any device imports (seconds' worth); each case runs in a
    child of it, which initialises the device afresh (a child forked before the
    runtime was in use gets a runtime of its own)."""

    def __init__(self):
        self._server = ForkServer(preload=(
            "torch", "torch._dynamo", "torch.fx.experimental.symbolic_shapes"))

    def run(self, source: str, timeout: float = 30.0) -> CaseResult:
        body = PRELUDE + textwrap.dedent(source) + EPILOGUE
        answer = self._server.run(["-c"], body, timeout=timeout, merge_output=True)
        code = answer["returncode"]
        return CaseResult(returncode=code, signal=-code if code < 0 else 0,
                          timed_out=answer["timed_out"], output=answer["stdout"][-20000:])

    def check(self, source: str, timeout: float = 30.0) -> CaseResult:
        """Runs a case; fails the calling test unless the child exited 0."""
        result = self.run(source, timeout)
        assert result.returncode == 0 and not result.timed_out, result.describe()
        return result

    def close(self) -> None:
        self._server.close()
