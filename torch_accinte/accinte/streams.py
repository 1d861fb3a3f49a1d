"""Streams and events of accinte (cf. torch.cuda.streams).

``Stream`` and ``Event`` are ``torch.Stream`` / ``torch.Event`` bound to the
accinte device type; every method reaches the runtime through the backend's
guard (AccInteGuardImpl): ``query`` -> acStreamQuery, ``synchronize`` ->
acStreamSynchronize, ``wait_event`` -> acStreamWaitEvent, ``record`` ->
acEventRecord, ``elapsed_time`` -> acEventElapsedTime.
"""

from __future__ import annotations

import torch

from ._lazy import _lazy_init
from ._utils import _device_t, _get_device_index

# torch.Stream stores its device type as c10::DeviceType's integer value.
_PRIVATEUSE1 = int(torch._C._autograd.DeviceType.PrivateUse1)


class Stream(torch.Stream):
    """An accinte stream: work queued on it runs in order, asynchronously.

    ``Stream(device=None, priority=0)`` takes a stream from the device's pool;
    priority -1 selects the high-priority pool. Each stream has its own worker
    in the runtime and is busy until its last task has finished.
    """

    def __new__(cls, device: _device_t = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # re-wrapping an existing stream
            return super().__new__(cls, **kwargs)
        _lazy_init()
        index = _get_device_index(device, optional=True)
        return super().__new__(cls, device=torch.device("accinte", index), priority=priority)

    def __repr__(self) -> str:
        return f"<torch.accinte.Stream device={self.device} stream_id={self.stream_id}>"


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(
        stream_id=stream.stream_id,
        device_index=stream.device_index,
        device_type=stream.device_type,
    )


class Event(torch.Event):
    """An accinte event: marks a point in a stream's work.

    ``Event(enable_timing=False, blocking=False, interprocess=False)``; timing
    is needed for ``elapsed_time`` (milliseconds between two recorded events).
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        return super().__new__(
            cls, device="accinte", enable_timing=enable_timing, blocking=blocking,
            interprocess=interprocess,
        )

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event to ``end_event`` (acEventElapsedTime).

        Both must have been created with ``enable_timing=True`` and completed.
        (torch.Event.elapsed_time accepts only exact torch.Event objects, so the
        subclass asks the runtime directly, by the events' native handles.)
        """
        from torch_accinte import _C

        return _C._event_elapsed_time(self.event_id, end_event.event_id)

    def __repr__(self) -> str:
        return f"<torch.accinte.Event device={self.device}>"


def current_stream(device: _device_t = None) -> Stream:
    """The calling thread's current stream on ``device``."""
    _lazy_init()
    return _wrap(torch._C._accelerator_getStream(_get_device_index(device, optional=True)))


def default_stream(device: _device_t = None) -> Stream:
    """The default stream of ``device`` (stream id 0)."""
    _lazy_init()
    index = _get_device_index(device, optional=True)
    return Stream(stream_id=0, device_index=index, device_type=_PRIVATEUSE1)


def _set_stream_or_restore(stream: torch.Stream) -> None:
    """torch._C._accelerator_setStream, which makes the stream's device
    current before it validates the stream: a forged stream (an id the
    device never handed out) is refused there, and the device that was
    current is restored before the error propagates."""
    previous = torch._C._accelerator_getDeviceIndex()
    try:
        torch._C._accelerator_setStream(stream)
    except BaseException:
        torch._C._accelerator_setDeviceIndex(previous)
        raise


def set_stream(stream: torch.Stream) -> None:
    """Makes ``stream`` the current stream of its device for the calling thread.

    Raises RuntimeError for a stream accinte never created, leaving the
    current device and stream unchanged."""
    if stream is None:
        return
    _lazy_init()
    _set_stream_or_restore(stream)


class StreamContext:
    """Context manager that makes ``stream`` current on its device (and the
    device current), restoring both on exit. ``None`` is a no-op.

    torch.Stream's own context manager does the switching and the restoring
    (it keeps a stack per stream, so contexts nest). One thing is added: if
    the stream is refused on entry (an id accinte never handed out), the
    device that was current is restored before the error propagates, as
    ``set_stream`` does; torch.Stream's would leave the stream's device current.
    """

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return
        previous = torch._C._accelerator_getDeviceIndex()
        try:
            self.stream.__enter__()
        except BaseException:
            torch._C._accelerator_setDeviceIndex(previous)
            raise

    def __exit__(self, *args: object) -> bool:
        if self.stream is not None:
            self.stream.__exit__(*args)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    """``with torch.accinte.stream(s):`` queues work on ``s``."""
    return StreamContext(stream)
