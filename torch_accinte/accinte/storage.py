"""torch.accinte's legacy typed storages: ``FloatStorage`` and friends.

``Tensor.storage_type()`` and ``TypedStorage.type()`` look the class for a
storage up by name in the device's module (``torch.storage``'s
``_get_legacy_storage_class`` asks ``getattr(torch.accinte, "FloatStorage")``
for the PrivateUse1 backend), so a backend that wants them answered defines
one class per legacy dtype, as ``torch.cuda`` does. The classes are generated
here from ``torch.storage``'s own name table (the quantized dtypes have
none, as on CUDA). Each is a ``TypedStorage`` on
accinte: ``torch.accinte.FloatStorage(4)`` allocates on the current device,
and ``isinstance(t.storage(), torch.accinte.FloatStorage)`` holds for a
float32 accinte tensor, because ``torch.storage`` reads the device from the
class's module name (``torch.accinte``).
"""

from __future__ import annotations

import torch
from torch._utils import classproperty
from torch.storage import _LegacyStorage, _dtype_to_storage_type_map, _warn_typed_storage_removal

__all__ = [
    "BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "ComplexDoubleStorage",
    "ComplexFloatStorage", "DoubleStorage", "FloatStorage", "HalfStorage", "IntStorage",
    "LongStorage", "ShortStorage",
]

# The module name torch.storage derives the device from, and pickle finds the
# classes under (torch._register_device_module puts torch.accinte in sys.modules).
_MODULE = "torch.accinte"


class _AccInteLegacyStorage(_LegacyStorage):
    """What accinte storages cannot do, refused as torch.cuda refuses it."""

    @classmethod
    def from_buffer(cls, *args, **kwargs):
        _warn_typed_storage_removal()
        raise RuntimeError("from_buffer: Not available for accinte storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for accinte storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for accinte storage")


def _legacy_storage_class(name: str, dtype: torch.dtype) -> type:
    def public_dtype(cls):
        _warn_typed_storage_removal()
        return cls._dtype

    namespace = {
        "__module__": _MODULE,
        "__qualname__": name,
        "__doc__": f"A typed storage of {dtype} elements on accinte (legacy; prefer "
                   "torch.UntypedStorage).",
        "dtype": classproperty(public_dtype),
        "_dtype": classproperty(lambda cls: dtype),
    }
    return type(_AccInteLegacyStorage)(name, (_AccInteLegacyStorage,), namespace)


# torch.cuda's set: every legacy dtype but the quantized ones.
_classes = {name: _legacy_storage_class(name, dtype)
            for dtype, name in _dtype_to_storage_type_map().items() if name in __all__}
globals().update(_classes)
torch._storage_classes.update(_classes.values())
