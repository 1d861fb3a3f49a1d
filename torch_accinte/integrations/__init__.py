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

import importlib.abc
import sys

__all__ = ["install_import_hooks"]

# Module whose import fills Lightning's accelerator registry -> the function
# that adds accinte to it (both package names Lightning ships under).
_REGISTRY_MODULES = {
    "lightning.pytorch.accelerators": "lightning.pytorch",
    "pytorch_lightning.accelerators": "pytorch_lightning",
}


# LITERALINCLUDE START: ECOSYSTEM IMPORT HOOK
class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the registry modules above it wraps the real
    loader so that, once the module has run, accinte's accelerator is added."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _REGISTRY_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenRegister(spec.loader, _REGISTRY_MODULES[fullname])
                return spec
        return None


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader, package: str) -> None:
        self._loader, self._package = loader, package

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        from torch_accinte.integrations import lightning

        lightning.register(self._package)


def install_import_hooks() -> None:
    """Registers accinte with libraries as they are imported. Idempotent; a
    library imported before this call is handled at once."""
    if any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        return
    for name, package in _REGISTRY_MODULES.items():
        if name in sys.modules:
            from torch_accinte.integrations import lightning

            lightning.register(package)
    sys.meta_path.insert(0, _RegisterAfterImport())
# LITERALINCLUDE END: ECOSYSTEM IMPORT HOOK
