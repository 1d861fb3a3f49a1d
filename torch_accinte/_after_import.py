"""Runs a function right after a module of another package is imported.

Some registrations can only be made into a module that ``import torch`` does
not import (Dynamo's device registry, Lightning's accelerator registry), and
importing it ourselves would make every ``import torch`` pay for it. So the
package asks to be called back instead: a finder at the front of
``sys.meta_path`` finds nothing itself, but wraps the loader of the named
modules so that, once a module has run, the functions registered for it run
too. A module already imported gets its functions at once; so does one in the
middle of its own import (it imported torch, which loaded accinte), which is in
``sys.modules`` already: its functions see only the part that has run.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from types import ModuleType

__all__ = ["after_import"]

_callbacks: dict[str, list[Callable[[ModuleType], None]]] = {}


# LITERALINCLUDE START: AFTER IMPORT HOOK
class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in _callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenCall(spec.loader, fullname)
                return spec
        return None


class _ThenCall(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, name: str) -> None:
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for callback in _callbacks.get(self._name, []):
            callback(module)
# LITERALINCLUDE END: AFTER IMPORT HOOK


_finder = _AfterImport()


def after_import(module: str, callback: Callable[[ModuleType], None]) -> None:
    """Calls ``callback(module)`` once ``module`` has been imported: now if it
    already is, otherwise right after its import."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    _callbacks.setdefault(module, []).append(callback)
    if module in sys.modules:
        callback(sys.modules[module])
