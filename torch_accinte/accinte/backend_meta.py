"""Backend-private metadata of accinte tensors and storages.

Two extension points PyTorch gives a PrivateUse1 backend, shown with small
examples (csrc/core):

- a tensor's ``c10::BackendMeta``: here a *format tag*, the kind of record a
  vendor keeps for a private memory layout. ``torch.save``/``torch.load``
  carry it (``torch::jit::TensorBackendMetaRegistry``). See Note [Tensor
  format] in csrc/core/AccInteTensorMeta.h.
- the storage class: every accinte storage is an ``AccInteStorageImpl``
  (``c10::SetStorageImplCreate``), carrying a private serial number. See
  Note [Custom storage] in csrc/core/AccInteStorageImpl.h.

Installed as ``torch.accinte._get_backend_format`` and friends.
"""

from __future__ import annotations

import torch
from torch_accinte import _C

__all__ = [
    "_get_backend_format", "_is_accinte_storage_impl", "_set_backend_format", "_storage_serial",
]


def _get_backend_format(tensor: torch.Tensor) -> int:
    """The format tag of an accinte tensor, 0 if none was set
    (c10::accinte::get_tensor_format). RuntimeError for a tensor on another device."""
    return _C._get_backend_format(tensor)


def _set_backend_format(tensor: torch.Tensor, format: int) -> None:
    """Sets the format tag of an accinte tensor (c10::accinte::set_tensor_format).

    The tag stays with this tensor and its shallow copies (``detach()``); views
    and operator results start without one. ``format`` must be >= 0."""
    _C._set_backend_format(tensor, int(format))


def _is_accinte_storage_impl(obj: torch.Tensor | torch.UntypedStorage) -> bool:
    """True if the storage of ``obj`` is an AccInteStorageImpl, i.e. was created
    through the backend's c10::SetStorageImplCreate factory."""
    return _C._is_accinte_storage_impl(obj)


def _storage_serial(obj: torch.Tensor | torch.UntypedStorage) -> int:
    """The AccInteStorageImpl serial number of the storage of ``obj``: equal for
    tensors sharing a storage, new for every new storage."""
    return _C._storage_serial(obj)
