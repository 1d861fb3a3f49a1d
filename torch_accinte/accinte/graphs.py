"""Graph capture and replay on accinte (cf. torch.cuda.graphs).

``torch.accelerator.Graph`` works with accinte as it is: PyTorch creates the
backend's ``at::GraphImplInterface`` (``AccInteGraph``, registered with
``REGISTER_GRAPH_IMPL``). This module adds the ``torch.cuda`` spellings on
top of it: ``Graph`` (``torch.cuda.CUDAGraph``), the ``graph`` context
manager, ``graph_pool_handle`` and ``is_current_stream_capturing``. Capture
is ``acStreamBeginCapture`` / ``acStreamEndCapture``, replay is
``acGraphLaunch``.
"""

from __future__ import annotations

import gc
from typing import Literal

import torch
from torch_accinte import _C

from ._lazy import _lazy_init, is_initialized
from .memory import empty_cache
from .mempool import _new_pool_id
from .streams import Stream
from .streams import stream as stream_context

__all__ = ["Graph", "graph", "graph_pool_handle", "is_current_stream_capturing"]

_CaptureErrorMode = Literal["default", "global", "thread_local", "relaxed"]


def is_current_stream_capturing() -> bool:
    """True if the current accinte stream is capturing a graph (acStreamIsCapturing).

    Code that must not synchronize while capturing (``.item()``, copies to
    the host) checks this first, as it checks ``torch.cuda``'s.
    """
    if not is_initialized():
        return False  # nothing can capture before the device is used
    return _C._is_current_stream_capturing()


def graph_pool_handle() -> tuple[int, int]:
    """A new memory pool id, for captures that should share one pool.

    Pass it as ``pool`` to several captures; the graphs must then be replayed
    in the order they were captured. Ids made here are ``(0, n)``; pools a
    capture makes itself are ``(n, 0)``, so the two never collide. Creates
    nothing: the pool appears with the first capture that uses it.
    """
    return _new_pool_id()


class Graph(torch.accelerator.Graph):
    """An accinte graph with ``torch.cuda.CUDAGraph``'s interface.

    Usually used through ``graph``. ``capture_begin`` takes the pool and
    capture error mode per capture, as ``CUDAGraph.capture_begin`` does;
    everything else is ``torch.accelerator.Graph``'s.
    """

    def __new__(cls, keep_graph: bool = False) -> Graph:
        return super().__new__(cls, keep_graph)

    def __init__(self, keep_graph: bool = False) -> None:
        super().__init__(keep_graph)

    def capture_begin(self, pool: tuple[int, int] | None = None,
                      capture_error_mode: _CaptureErrorMode = "global") -> None:
        """Begins capturing the current stream (not a default stream).

        ``pool``: another graph's ``pool()`` or a ``graph_pool_handle()`` to
        share memory with. ``capture_error_mode``: which threads may make
        calls that wait for the device during capture ("global": none,
        "thread_local": others, "relaxed": all).
        """
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode
        super().capture_begin()


class graph:
    """Context manager capturing the work of its block into ``accinte_graph``.

    Like ``torch.cuda.graph``: synchronizes the device, empties the cache,
    then captures on ``stream`` (a side stream shared by all captures of the
    device when omitted), so the block runs on that stream.

    Arguments:
        accinte_graph (Graph): the graph to capture into.
        pool (tuple[int, int], optional): memory pool to share, from another
            graph's ``pool()`` or ``graph_pool_handle()``.
        stream (torch.accinte.Stream, optional): the capture stream.
        capture_error_mode (str, optional): see ``Graph.capture_begin``.
    """

    _default_capture_streams: dict[int, torch.Stream] = {}

    def __init__(self, accinte_graph: Graph, pool: tuple[int, int] | None = None,
                 stream: torch.Stream | None = None,
                 capture_error_mode: _CaptureErrorMode = "global") -> None:
        # torch.accinte.current_device and synchronize are these torch.accelerator
        # calls after _lazy_init; they live in the package's __init__.py, which
        # imports this module before defining them.
        _lazy_init()
        if stream is None:
            device = torch.accelerator.current_device_index()
            streams = graph._default_capture_streams
            if device not in streams:
                streams[device] = Stream(device)
            stream = streams[device]
        self.accinte_graph = accinte_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_ctx = stream_context(stream)

    def __enter__(self) -> None:
        torch.accelerator.synchronize()
        gc.collect()
        empty_cache()
        self._stream_ctx.__enter__()
        try:
            self.accinte_graph.capture_begin(self.pool,
                                             capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.accinte_graph.capture_end()
        finally:
            self._stream_ctx.__exit__(*exc_info)
