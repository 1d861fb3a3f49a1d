"""Memory statistics and management of accinte (cf. torch.cuda.memory).

The statistics come from the backend's c10::DeviceAllocator
(AccInteDeviceAllocator) through ``torch.accelerator.memory``: same keys and
meaning as ``torch.cuda.memory_stats``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

from ._utils import _device_t, _get_device_index

__all__ = [
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]


def _index(device: _device_t) -> int:
    return _get_device_index(device, optional=True)


def empty_cache() -> None:
    """Returns cached, unused device memory to the runtime (acFree)."""
    torch.accelerator.memory.empty_cache()


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
