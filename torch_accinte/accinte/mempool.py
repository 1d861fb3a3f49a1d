"""Memory pools of accinte's caching allocator (cf. torch.cuda.MemPool).

A pool is a private part of the caching allocator: blocks allocated into it
come from segments of its own and are reused only by allocations into it
again (Note [accinte graph memory] in
csrc/runtime/AccInteCachingAllocatorPrivatePools.cpp). Graphs get one each
when they capture; ``MemPool`` makes one for the user, and ``use_mem_pool``
routes the calling thread's allocations to it. Pool ids are ``(0, n)`` for the
user's pools and ``graph_pool_handle``'s, ``(n, 0)`` for the pools a capture
makes itself.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch_accinte import _C

from ._lazy import _lazy_init
from ._utils import _device_t, _get_device_index

__all__ = ["MemPool", "use_mem_pool"]

_pool_ids = itertools.count(1)
_pool_ids_lock = threading.Lock()


def _new_pool_id() -> tuple[int, int]:
    """A pool id ``(0, n)`` no other pool of the process has."""
    with _pool_ids_lock:
        return (0, next(_pool_ids))


class MemPool:
    """A memory pool of the current accinte device, as ``torch.cuda.MemPool``.

    Args:
        allocator: must be ``None``: accinte has one allocator, the caching
            allocator (CUDA's pluggable allocators have no counterpart here).
        use_on_oom: when an allocation outside the pool finds no room even
            after the cache is released, a free block of this pool serves it.
        no_split: blocks of this pool are never split; each allocation gets
            a block of its own.

    The pool lives while this object does (one use), and while a
    ``use_mem_pool`` context or a graph captured into it holds it. Deleting the
    object releases its use; once no use is left, its free segments go back to
    the device, and the segments of tensors still alive follow when they are
    freed and the cache is emptied.
    """

    def __init__(self, allocator: Any = None, use_on_oom: bool = False,
                 no_split: bool = False) -> None:
        if allocator is not None:
            raise NotImplementedError(
                "torch.accinte.MemPool: allocator must be None; accinte has no pluggable "
                "allocators, every pool belongs to the caching allocator")
        _lazy_init()
        self._device = torch.accinte.current_device()
        self._id = _new_pool_id()
        _C._mempool_create(self._device, self._id, bool(use_on_oom), bool(no_split))

    @property
    def id(self) -> tuple[int, int]:
        """The pool's id, ``(0, n)``: pass it as ``pool=`` to a graph capture."""
        return self._id

    @property
    def allocator(self) -> None:
        """``None``: the pool belongs to the caching allocator."""
        return None

    def use_count(self) -> int:
        """Users holding the pool: this object, open ``use_mem_pool`` contexts, graphs."""
        return _C._mempool_use_count(self._device, self._id)

    def snapshot(self) -> list[dict[str, Any]]:
        """The pool's segments, in the format of ``torch.accinte.memory._snapshot()``."""
        from .memory import _snapshot

        return [segment for segment in _snapshot()["segments"]
                if tuple(segment["segment_pool_id"]) == self._id]

    def __del__(self) -> None:
        pool_id = getattr(self, "_id", None)
        if pool_id is None or _C is None:  # __init__ failed, or the interpreter is exiting
            return
        try:
            _C._mempool_release(self._device, pool_id)
        except Exception:  # noqa: BLE001 - a destructor must not raise
            pass


# LITERALINCLUDE START: USE MEM POOL
@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device: _device_t = None) -> Iterator[None]:
    """Routes the calling thread's allocations on ``device`` (the current
    device by default) to ``pool`` while the context is open, whatever the
    stream. Other threads, including the autograd engine's backward threads,
    allocate as usual. The context holds one use of the pool.
    """
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool: expected a torch.accinte.MemPool, got "
                        f"{type(pool).__name__}")
    _lazy_init()
    index = torch.accinte.current_device() if device is None else _get_device_index(device)
    _C._begin_allocate_current_thread_to_pool(index, pool.id)
    try:
        yield
    finally:
        _C._end_allocate_to_pool(index, pool.id)
        _C._release_pool(index, pool.id)
# LITERALINCLUDE END: USE MEM POOL
