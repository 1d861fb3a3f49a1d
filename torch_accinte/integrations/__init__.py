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
| ``transformers`` | transformers 5.x / accelerate 1.x | a plain ``TrainingArguments()`` on accinte, bf16 too |

Nothing here is imported by users: ``install_import_hooks`` (called when torch
autoloads accinte) runs each module's functions the moment the library module
they serve is imported. Lightning's accelerator registry has no entry point for
third-party accelerators, so ``"accinte"`` is registered when the registry is
imported: ``Trainer(accelerator="accinte")`` works as it stands. transformers
and accelerate read ``ACCELERATE_TORCH_DEVICE`` for a device they do not list,
so it is set when accelerate's state module is imported: a plain
``TrainingArguments()`` trains on accinte.
"""

from __future__ import annotations

from types import ModuleType

from torch_accinte._after_import import after_import

__all__ = ["install_import_hooks"]

_installed = False
# Module whose import fills Lightning's accelerator registry -> the package it
# belongs to (both package names Lightning ships under).
_REGISTRY_MODULES = {
    "lightning.pytorch.accelerators": "lightning.pytorch",
    "pytorch_lightning.accelerators": "pytorch_lightning",
}
# Module of transformers or accelerate -> the function of transformers.py that
# answers for accinte there.
_HUGGING_FACE_MODULES = {
    "accelerate.state": "on_accelerate_state",
    "transformers.utils": "on_bf16_check",
    "transformers.training_args": "on_bf16_check",
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
    for name, function in _HUGGING_FACE_MODULES.items():
        after_import(name, lambda module, function=function: _answer_hugging_face(function, module))


def _register_lightning(package: str) -> None:
    from torch_accinte.integrations import lightning

    lightning.register(package)


def _answer_hugging_face(function: str, module: ModuleType) -> None:
    from torch_accinte.integrations import transformers

    getattr(transformers, function)(module)
# LITERALINCLUDE END: ECOSYSTEM IMPORT HOOK
