"""torch_accinte: the ``accinte`` device for PyTorch, emulated on the CPU.

Importing this package (which ``import torch`` does by itself through the
``torch.backends`` entry point, see ``_autoload``) loads the four native
libraries, names the PrivateUse1 backend ``accinte``, installs
``torch.accinte`` and generates the ``Tensor.accinte()``-style methods.
"""

# LITERALINCLUDE START: AUTOLOAD HOOK
# Defined before anything is imported: `import torch_accinte` first imports
# torch, whose own import autoloads this package again. torch then finds the
# partly imported module here and calls `_autoload` on it; that call must
# succeed and do nothing, since registration completes at the end of this file.
_registered = False


def _autoload() -> None:
    """Entry point named in pyproject.toml (group ``torch.backends``).

    Registration happens when this package is imported, so this only has to
    exist and be re-entrant. With ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` torch
    skips it and ``import torch_accinte`` registers the backend explicitly.
    """
    if _registered or "_register_backend" not in globals():
        return
    _register_backend()
# LITERALINCLUDE END: AUTOLOAD HOOK


import importlib.util  # noqa: E402

import torch  # noqa: E402

from torch_accinte import _C  # noqa: E402,F401  (loads the libraries and their registrations)
from torch_accinte import accinte  # noqa: E402

__all__ = ["accinte"]


def _has_mechanism(name: str) -> bool:
    """Whether the package holds the optional mechanism `name` (a module or
    package of torch_accinte): a backend brought up step by step may not have
    it yet. One that exists is imported, and its errors are raised."""
    return importlib.util.find_spec(f"torch_accinte.{name}") is not None


def _dynamo_registration(module: object) -> None:
    from torch_accinte import _dynamo_interface

    _dynamo_interface.register()


# LITERALINCLUDE START: AUTOLOAD REGISTRATION
def _register_backend() -> None:
    """Registers accinte with torch, once per process."""
    global _registered
    if _registered:
        return
    torch.utils.rename_privateuse1_backend("accinte")
    torch._register_device_module("accinte", accinte)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    # torch.multiprocessing has no IPC hook for PrivateUse1: add ours.
    from torch_accinte.accinte import reductions

    reductions.init_reductions()
    # Checkpoints: accinte storages restored as the CPU restores its own.
    from torch_accinte.accinte import serialization

    serialization.init_serialization()
    # DLPack's protocol method for accinte tensors (pytorch/pytorch#195815).
    from torch_accinte.accinte import _dlpack

    _dlpack.install()
    # Kernels run under the default dtype and deterministic-algorithms setting
    # they were launched under (Note [accinte kernels and process-wide settings]).
    from torch_accinte.accinte import _process_settings

    _process_settings.install()
    # Python registrations name the device, so they come after the rename.
    from torch_accinte.accinte import ops  # noqa: F401
    # Libraries with device lists of their own learn about accinte when they
    # are imported (torch_accinte/integrations/).
    if _has_mechanism("integrations"):
        from torch_accinte import integrations

        integrations.install_import_hooks()
    # torch.compile: Dynamo's device registry learns about accinte when it is
    # imported (Note in torch_accinte/_dynamo_interface.py).
    if _has_mechanism("_dynamo_interface"):
        from torch_accinte._after_import import after_import

        after_import("torch._dynamo.device_interface", _dynamo_registration)
    # torch.distributed: the "accl" backend for accinte tensors.
    if torch.distributed.is_available() and _has_mechanism("distributed"):
        from torch_accinte import distributed

        distributed.register()
    _registered = True


_register_backend()
# LITERALINCLUDE END: AUTOLOAD REGISTRATION
