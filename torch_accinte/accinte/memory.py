"""Memory statistics and management of accinte (cf. torch.cuda.memory).

Device memory comes from the backend's caching allocator (a
c10::DeviceAllocator, csrc/runtime/AccInteDeviceAllocator): the statistics
reach Python through ``torch.accelerator.memory`` with the same keys and
meaning as ``torch.cuda.memory_stats``; the per-process fraction, pinned-memory
statistics and memory history/snapshots come from ``torch_accinte._C``.
"""

from __future__ import annotations

import pickle
import sys
from collections import OrderedDict
from typing import Any

import torch
from torch_accinte import _C

from ._lazy import _is_in_bad_fork, _lazy_init
from ._utils import _device_t, _get_device_index
from .mempool import MemPool, use_mem_pool

__all__ = [
    "empty_cache", "get_per_process_memory_fraction", "host_memory_stats",
    "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_stats", "memory_summary", "reset_accumulated_host_memory_stats",
    "reset_accumulated_memory_stats", "reset_peak_host_memory_stats", "reset_peak_memory_stats",
    "set_per_process_memory_fraction", "MemPool", "use_mem_pool",
]


def _index(device: _device_t) -> int:
    return _get_device_index(device, optional=True)


def empty_cache() -> None:
    """Returns cached, unused device memory to the runtime (acFree), after
    letting go of shared storages no other process holds (``ipc_collect``),
    and the emulation's cached kernel scratch memory to the CPU's allocator
    (Note [accinte kernel scratch memory]). Does nothing in a child forked
    after accinte was initialised, as ``torch.cuda.empty_cache`` does: the
    cache there is a copy of the parent's."""
    from .reductions import ipc_collect

    if _is_in_bad_fork():
        return

    ipc_collect()
    torch.accelerator.memory.empty_cache()  # the kernel scratch cache's blocks too


def memory_stats(device: _device_t = None) -> OrderedDict[str, Any]:
    """Allocator statistics of ``device`` as a flat dict
    (``"allocated_bytes.all.current"``, ``"num_ooms"``, ...)."""
    return torch.accelerator.memory.memory_stats(_index(device))


def memory_allocated(device: _device_t = None) -> int:
    """Bytes currently occupied by tensors on ``device``."""
    return torch.accelerator.memory.memory_allocated(_index(device))


def max_memory_allocated(device: _device_t = None) -> int:
    """Peak of ``memory_allocated`` since start or the last peak reset."""
    return torch.accelerator.memory.max_memory_allocated(_index(device))


def memory_reserved(device: _device_t = None) -> int:
    """Bytes the allocator holds on ``device`` (allocated plus cached)."""
    return torch.accelerator.memory.memory_reserved(_index(device))


def max_memory_reserved(device: _device_t = None) -> int:
    """Peak of ``memory_reserved`` since start or the last peak reset."""
    return torch.accelerator.memory.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device: _device_t = None) -> None:
    """Sets every peak statistic of ``device`` to its current value."""
    torch.accelerator.memory.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: _device_t = None) -> None:
    """Zeroes the cumulative counters (allocated/freed totals, num_ooms, ...)."""
    torch.accelerator.memory.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device: _device_t = None) -> tuple[int, int]:
    """(free, total) bytes of ``device`` as the runtime sees them (acMemGetInfo)."""
    return torch.accelerator.memory.get_memory_info(_index(device))


def set_per_process_memory_fraction(fraction: float, device: _device_t = None) -> None:
    """Caps what the caching allocator may reserve on ``device`` at
    ``fraction * total_memory``; a request beyond it frees the cache, retries,
    then raises ``torch.OutOfMemoryError`` (the allocator's acMalloc budget)."""
    _lazy_init()
    if not isinstance(fraction, float):
        raise TypeError(f"fraction must be a float, got {type(fraction).__name__}")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C._set_memory_fraction(fraction, _index(device))


def get_per_process_memory_fraction(device: _device_t = None) -> float:
    """The fraction set by :func:`set_per_process_memory_fraction` (1.0 by default)."""
    _lazy_init()
    return _C._get_memory_fraction(_index(device))


# LITERALINCLUDE START: ALLOCATOR SETTINGS AT RUN TIME
def _set_allocator_settings(settings: str) -> None:
    """Changes the caching allocator's settings as ``PYTORCH_ALLOC_CONF`` sets
    them at start (``"max_split_size_mb:64,garbage_collection_threshold:0.6"``);
    each applies from the next allocation (Note [accinte allocator settings]).
    PyTorch parses the string for every accelerator and it replaces the
    previous settings whole: a key it does not name returns to its default.
    A bad key or value raises ``ValueError`` naming the string (PyTorch's own
    message can be a bare "stoull"); the settings are the defaults then."""
    try:
        torch._C._accelerator_setAllocatorSettings(settings)
    except (ValueError, RuntimeError) as error:
        raise ValueError(f"invalid allocator settings {settings!r}: {error}") from error
# LITERALINCLUDE END: ALLOCATOR SETTINGS AT RUN TIME


def host_memory_stats() -> OrderedDict[str, Any]:
    """Statistics of the pinned-memory cache as a flat dict, with the keys of
    ``torch.cuda.host_memory_stats`` (``"allocations.current"``,
    ``"active_bytes.peak"``, ``"num_host_alloc"``, ...). Blocks come from
    acMallocHost and go back with acFreeHost."""
    result: list[tuple[str, Any]] = []

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                flatten(f"{prefix}.{key}" if prefix else key, sub)
        else:
            result.append((prefix, value))

    flatten("", _C._host_memory_stats())
    return OrderedDict(sorted(result))


def reset_accumulated_host_memory_stats() -> None:
    """Zeroes the pinned-memory cache's cumulative counters."""
    _C._reset_accumulated_host_memory_stats()


def reset_peak_host_memory_stats() -> None:
    """Sets the pinned-memory cache's peaks to their current values."""
    _C._reset_peak_host_memory_stats()


def _format_bytes(n: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:6.0f} {unit}" if unit == "B  " else f"{n:6.1f} {unit}"
        n /= 1024
    return f"{n:6.1f} TiB"


def memory_summary(device: _device_t = None, abbreviated: bool = False) -> str:
    """A readable table of :func:`memory_stats` for ``device``: current, peak,
    allocated-in-total and freed-in-total of every statistic, per pool unless
    ``abbreviated``. Meant for printing after an out-of-memory error."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocations", "active", False),
        ("Reserved segments", "segment", False),
        ("Non-releasable allocations", "inactive_split", False),
    ]
    pools = [("all", "")] if abbreviated else [
        ("all", ""), ("large_pool", "  from large pool"), ("small_pool", "  from small pool")]
    width = 30
    columns = ("current", "peak", "allocated", "freed")
    rule = "+" + "-" * (width + 2) + ("+" + "-" * 14) * len(columns) + "+"
    lines = [
        rule,
        f"| {'accinte memory summary, device accinte:' + str(index):<{width + 2 + 15 * 4 - 1}}|",
        f"| {'out-of-memory errors: ' + str(stats.get('num_ooms', 0)):<{width}} | "
        f"{'cache flushes (alloc retries): ' + str(stats.get('num_alloc_retries', 0)):<58}|",
        rule,
        f"| {'Metric':<{width}} |" + "|".join(f" {c:>12} " for c in columns) + "|",
        rule,
    ]
    for title, key, in_bytes in rows:
        for pool, label in pools:
            values = [stats.get(f"{key}.{pool}.{c}", 0) for c in columns]
            cells = [_format_bytes(v) if in_bytes else f"{v:d}" for v in values]
            name = label or title
            lines.append(f"| {name:<{width}} |" + "|".join(f" {c:>12} " for c in cells) + "|")
        lines.append(rule)
    lines.append(f"| {'acMalloc calls: ' + str(stats.get('num_device_alloc', 0)):<{width}} | "
                 f"{'acFree calls: ' + str(stats.get('num_device_free', 0)):<58}|")
    lines.append(rule)
    return "\n".join(lines) + "\n"


def _record_memory_history(
    enabled: str | bool | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device: _device_t = None,
    clear_history: bool = False,
) -> None:
    """Starts (or with ``enabled=None`` stops) recording the caching
    allocator's history on every accinte device, with the arguments of
    ``torch.cuda.memory._record_memory_history``:

    - ``enabled``: ``"state"`` keeps a stack for each live block, ``"all"``
      also keeps a trace of every allocator action (up to ``max_entries``
      per device, oldest overwritten first);
    - ``context``: which stacks to keep: ``"state"`` (live blocks),
      ``"alloc"`` (and alloc trace entries), ``"all"`` (and free entries), or
      None;
    - ``stacks``: ``"python"`` frames, or ``"all"`` to add C++ frames.

    ``device`` is accepted for compatibility; recording is process-wide.
    Read the result with :func:`_snapshot`."""
    _lazy_init()
    if isinstance(enabled, bool):  # the legacy form: True/False
        enabled = "all" if enabled else None
    _C._record_memory_history(enabled, context, stacks, max_entries, clear_history)


def _snapshot(device: _device_t = None) -> dict[str, Any]:
    """The allocator's state and history, in the format of
    ``torch.cuda.memory._snapshot`` that PyTorch's memory visualiser
    (``torch.cuda._memory_viz``, pytorch.org/memory_viz) reads::

        {"segments": [{"device", "address", "total_size", "allocated_size",
                       "active_size", "requested_size", "stream", "segment_type",
                       "segment_pool_id", "is_expandable", "frames",
                       "blocks": [{"address", "size", "requested_size", "state",
                                   "frames"}]}],
         "device_traces": [[{"action", "addr", "size", "stream", "time_us",
                             "frames"}, ...] per device]}

    Segments are acMalloc allocations; ``stream`` is the runtime's acStream_t
    handle. ``device`` is accepted for compatibility: every device is included."""
    _lazy_init()
    return _C._memory_snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles :func:`_snapshot` to ``filename``, for pytorch.org/memory_viz."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
