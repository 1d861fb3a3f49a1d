"""A stream held busy by the host: proves that calls queue their work instead of
waiting for the device, without timing anything.

`torch.accinte._sleep(ms)` keeps a stream busy for a fixed time, so a test that
checks "the stream is still busy after these calls" fails whenever a loaded
machine takes longer than `ms` to make the calls. `hold_stream()` instead
queues a kernel that does not finish until the test lets it go: every call
made inside the block either returned while the kernel still held the stream
(it queued its work) or waited for the stream, which the kernel only releases
by itself after `timeout` seconds (then `held()` is False and the test fails
with a message, instead of hanging).

    with hold_stream() as hold:
        y = x.abs()             # queued behind the held kernel
        assert hold.held()      # no call waited for the device
    # leaving the block releases the stream

The held kernel is a CPU kernel written in Python (operator
`accinte_tests::hold`), queued on the current stream by the fallback like any
other; it waits on a `threading.Event` without the GIL.
"""

from __future__ import annotations

import collections
import contextlib
import threading

import torch

_lib = torch.library.Library("accinte_tests", "DEF")
_lib.define("hold(Tensor x) -> Tensor")


class _Gate:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.opened = threading.Event()    # set when the block ends
        self.finished = threading.Event()  # set by the held kernel when it returns
        self.timed_out = False


# Gates of the hold kernels queued and not yet run, in launch order.
_gates: collections.deque[_Gate] = collections.deque()


def _hold_kernel(x: torch.Tensor) -> torch.Tensor:
    # The kernel also runs at the call when the engine checks a new signature
    # on host stand-ins: hold_stream() makes that call before it queues its
    # gate. A host thread that waits for the stream runs the held kernel
    # itself (Note [accinte a waiting host runs the queue]): it holds there
    # too, until the timeout lets the wait through.
    if _gates:
        gate = _gates.popleft()
        if not gate.opened.wait(gate.timeout):
            gate.timed_out = True  # a call waited for the stream: let it through
        gate.finished.set()
    return x.clone()  # a fresh result: a kernel returning its input runs synchronously


_lib.impl("hold", _hold_kernel, "CPU")
_lib.impl("hold", lambda x: torch.empty_like(x), "Meta")


class HeldStream:
    """The stream a hold_stream() block holds."""

    def __init__(self, gate: _Gate, stream: torch.accinte.Stream):
        self._gate = gate
        self.stream = stream

    def held(self) -> bool:
        """True while the held kernel still waits for the block to end: no
        call made in the block so far has waited for the stream."""
        return not self._gate.opened.is_set() and not self._gate.timed_out


@contextlib.contextmanager
def hold_stream(timeout: float = 60.0):
    """Holds the current stream busy until the block ends (or `timeout`
    seconds pass: a call that waits for the device gets through then, and
    `held()` tells). Leaving the block waits for the held kernel to return, so
    blocks never overlap."""
    assert not _gates, "hold_stream() blocks do not nest"
    token = torch.zeros(1, device="accinte")
    torch.ops.accinte_tests.hold(token)  # a new signature is checked at the call
    gate = _Gate(timeout)
    _gates.append(gate)
    try:
        torch.ops.accinte_tests.hold(token)  # queued: waits on the stream's worker
        yield HeldStream(gate, torch.accinte.current_stream())
    finally:
        gate.opened.set()
        if not gate.finished.wait(timeout):
            _gates.clear()
            raise RuntimeError("hold_stream: the held kernel never ran")
