"""Where ``torch.load`` puts storages saved from accinte (``map_location``).

PyTorch's own entry for a PrivateUse1 device restores a storage with
``storage.to(device)``, which makes a resizable storage; the CPU's restored
storages are not resizable. The difference matters for a corrupted or
crafted checkpoint whose tensor reaches past its storage record: the CPU
refuses it ("Trying to resize storage that is not resizable"), while a
resizable storage would silently grow, and the grown part would hold
whatever the caching allocator last kept there. ``_restore_location``, tried
before PyTorch's entry, restores accinte storages as the CPU does:
not resizable. See Note [accinte storage growth] in csrc/runtime/AccInteHooks.cpp.
"""

from __future__ import annotations

import torch
import torch.serialization

from ._utils import _get_device_index

__all__: list[str] = []

# Before PyTorch's entries for cuda (20) and PrivateUse1 (23); a priority no
# other entry uses, since entries of equal priority cannot be ordered.
_PRIORITY = 19


def _no_tag(storage: torch.UntypedStorage) -> None:
    """Tagging (which device a saved storage came from) stays PyTorch's."""
    return None


# LITERALINCLUDE START: SERIALIZATION RESTORE LOCATION
def _restore_location(storage: torch.UntypedStorage, location: str) -> torch.UntypedStorage | None:
    """Moves a loaded storage to the accinte device ``location`` names (None
    for any other location), as a storage that cannot be resized, like the
    CPU's. Raises RuntimeError for an index that names no device."""
    if location != "accinte" and not location.startswith("accinte:"):
        return None
    from torch_accinte import _C

    device = torch.device("accinte", _get_device_index(torch.device(location), optional=True))
    restored = storage.to(device=device)
    _C._set_storage_resizable(restored, False)
    return restored
# LITERALINCLUDE END: SERIALIZATION RESTORE LOCATION


def init_serialization() -> None:
    """Registers ``_restore_location`` with torch.serialization (once)."""
    if not any(entry[2] is _restore_location for entry in torch.serialization._package_registry):
        torch.serialization.register_package(_PRIORITY, _no_tag, _restore_location)
