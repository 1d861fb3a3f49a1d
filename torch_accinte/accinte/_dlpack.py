"""DLPack for accinte tensors: ``torch.from_dlpack(t)`` and
``t.__dlpack_device__()``, as for CUDA tensors.

PyTorch exchanges a PrivateUse1 tensor through DLPack as ``kDLExtDev`` with its
device index (ATen's DLConvertor), so ``torch.utils.dlpack.to_dlpack`` and
``from_dlpack`` of a capsule work. The protocol method ``__dlpack_device__`` of
2.13 does not: it compares the device type with the literal ``"privateuse1"``,
which a renamed backend's tensors never have (``"accinte"``), and raises
"Unknown device type accinte for Dlpack"; ``torch.from_dlpack(tensor)`` calls it
first and fails the same way. Upstream fix: pytorch/pytorch#195815 (compare
with the renamed backend's name). Remove this module once the pinned torch has
it.
"""

from __future__ import annotations

import enum

import torch
from torch.overrides import has_torch_function_unary

_protocol_device = torch.Tensor.__dlpack_device__


# LITERALINCLUDE START: DLPACK DEVICE
def _dlpack_device(self: torch.Tensor) -> tuple[enum.IntEnum, int]:
    # Only the renamed backend's plain tensors are answered here; subclasses
    # with __torch_function__ and every other device keep torch's method.
    device = self.device
    if device.type == "accinte" and not has_torch_function_unary(self):
        from torch.utils.dlpack import DLDeviceType

        return DLDeviceType.kDLExtDev, device.index or 0
    return _protocol_device(self)
# LITERALINCLUDE END: DLPACK DEVICE


def install() -> None:
    """Replaces ``torch.Tensor.__dlpack_device__`` by the version above
    (idempotent), when the backend registers."""
    torch.Tensor.__dlpack_device__ = _dlpack_device  # type: ignore[method-assign]
