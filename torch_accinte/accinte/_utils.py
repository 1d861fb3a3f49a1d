"""Device-argument parsing shared by torch.accinte (cf. torch.cuda._utils)."""

from __future__ import annotations

from typing import Union

import torch

_device_t = Union[torch.device, str, int, None]


def _get_device_index(device: _device_t, optional: bool = False) -> int:
    """Index of an accinte device given as int, str, torch.device or None.

    None, "accinte" without an index and -1 mean the current device when
    ``optional`` is true. Raises ValueError for a device of another type and
    RuntimeError naming the valid range for any other index out of range,
    -2 and below included (as an invalid ordinal is on CUDA).

    Not torch.accelerator._utils._get_device_index: that helper returns any
    integer unchecked and words a foreign device type as "doesn't match the
    current accelerator", where torch.cuda says "Expected a cuda device".
    """
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "accinte":
            raise ValueError(f"Expected an accinte device, but got: {device}")
        device = device.index
    if device is None or (device == -1 and optional):
        if not optional:
            raise ValueError("Expected an accinte device with a specified index, got None")
        return torch._C._accelerator_getDeviceIndex()
    if not isinstance(device, int):
        raise ValueError(f"Cannot interpret {device!r} as an accinte device")
    from torch_accinte import _C

    count = _C._get_device_count()
    if not 0 <= device < count:
        raise RuntimeError(
            f"Invalid accinte device index {device}: {count} device(s) available "
            f"(valid indices are 0..{count - 1}; ACCINTE_DEVICE_COUNT sets the count)"
        )
    return device
