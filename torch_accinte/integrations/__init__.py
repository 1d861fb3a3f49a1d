"""Glue between accinte and the libraries people train with.

Libraries that support accelerators often find them through a list of device
types written into their source (``"cuda"``, ``"xpu"``, ``"npu"``...). A new
device is missing from such lists until the library learns about it; the
modules here close those gaps for accinte, each in the smallest place the
library allows, and each says which line of the library it works around (see
docs/chapters/ecosystem.md).

| module | library | what it provides |
|---|---|---|
| ``lightning`` | Lightning 2.x | ``AccinteAccelerator``, registered as ``"accinte"`` |
| ``transformers`` | transformers 5.x / accelerate 1.x | ``TrainingArguments`` that train on accinte, with bf16 |

Lightning's accelerator registry has no entry point for third-party
accelerators, so ``install_import_hooks`` (called when torch autoloads
accinte) registers ``"accinte"`` the moment Lightning's registry is imported:
``Trainer(accelerator="accinte")`` works without importing anything from here.
"""

from __future__ import annotations

from torch_accinte._after_import import after_import

__all__ = ["install_import_hooks"]

# Module whose import fills Lightning's accelerator registry -> the function
# that adds accinte to it (both package names Lightning ships under).
_installed = False
_REGISTRY_MODULES = {
    "lightning.pytorch.accelerators": "lightning.pytorch",
    "pytorch_lightning.accelerators": "pytorch_lightning",
}


# LITERALINCLUDE START: ECOSYSTEM IMPORT HOOK
def install_import_hooks() -> None:
    """Registers accinte with libraries as they are imported
    (torch_accinte/_after_import.py); a library imported before this call is
    handled at once. Idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    for name, package in _REGISTRY_MODULES.items():
        after_import(name, lambda _module, package=package: _register_lightning(package))


def _register_lightning(package: str) -> None:
    from torch_accinte.integrations import lightning

    lightning.register(package)
# LITERALINCLUDE END: ECOSYSTEM IMPORT HOOK
