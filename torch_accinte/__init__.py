"""torch_accinte: the ``accinte`` device for PyTorch, emulated on the CPU.

Importing this package (which ``import torch`` does by itself through the
``torch.backends`` entry point, see ``_autoload``) loads the four native
libraries, names the PrivateUse1 backend ``accinte``, installs
``torch.accinte`` and generates the ``Tensor.accinte()``-style methods.
"""

import torch

from torch_accinte import _C  # noqa: F401  (loads the libraries and their registrations)
from torch_accinte import accinte

__all__ = ["accinte"]

_registered = False


def _register_backend() -> None:
    """Registers accinte with torch, once per process (safe to call again)."""
    global _registered
    if _registered:
        return
    torch.utils.rename_privateuse1_backend("accinte")
    torch._register_device_module("accinte", accinte)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    _registered = True


_register_backend()


def _autoload() -> None:
    """Entry point named in pyproject.toml (group ``torch.backends``).

    torch imports this module while ``import torch`` runs, so registration
    already happened at import time; calling again is a no-op. Set
    ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` to turn autoloading off, then
    ``import torch_accinte`` registers the backend explicitly.
    """
    _register_backend()
