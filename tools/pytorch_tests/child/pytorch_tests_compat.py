"""Names older PyTorch test files import that the installed torch moved or dropped.

A test tree is older than the torch it runs against (here a 2023 tree on
torch 2.13), and its files import helpers of torch.testing._internal by name.
install() adds each missing name, written here for this purpose, to the module
the old files import it from; a name the installed torch still has is never
replaced. Add a shim when a file's collection fails with "cannot import name".
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import unittest


def _skip_if_mps():
    """common_utils.skipIfMps (removed in 2024): skips where MPS is the device."""
    from torch.testing._internal import common_utils

    def skipIfMps(fn):
        return unittest.skipIf(common_utils.TEST_MPS, "test doesn't currently work with MPS")(fn)

    return skipIfMps


def _binary_ufuncs_and_refs():
    """common_methods_invocations.binary_ufuncs_and_refs (removed in 2023): the
    binary ufunc OpInfos of op_db followed by their Python references."""
    from torch.testing._internal import common_methods_invocations as cmi
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo

    return tuple(op for op in list(cmi.op_db) + list(cmi.python_ref_db)
                 if isinstance(op, BinaryUfuncInfo))


def _tf32_is_not_fp32():
    """common_cuda.tf32_is_not_fp32 (removed in 2024): whether matmuls may round
    float32 inputs to TF32, which only CUDA devices of compute capability 8.0 and
    later do."""
    import torch

    def tf32_is_not_fp32():
        return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)

    return tf32_is_not_fp32


def _new_module_tests():
    """common_nn.new_module_tests (a function call since 2023): the module test
    definitions get_new_module_tests() returns."""
    from torch.testing._internal import common_nn

    return common_nn.get_new_module_tests()


# module -> {name: factory}: factory() makes the value when the module lacks the name.
SHIMS = {
    "torch.testing._internal.common_utils": {"skipIfMps": _skip_if_mps},
    "torch.testing._internal.common_methods_invocations": {
        "binary_ufuncs_and_refs": _binary_ufuncs_and_refs},
    "torch.testing._internal.common_cuda": {"tf32_is_not_fp32": _tf32_is_not_fp32},
    "torch.testing._internal.common_nn": {"new_module_tests": _new_module_tests},
}
added: list[str] = []  # "module.name" of every name added so far


def _add_missing(module) -> None:
    for name, factory in SHIMS[module.__name__].items():
        if not hasattr(module, name):
            setattr(module, name, factory())
            added.append(f"{module.__name__}.{name}")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Adds a module's missing names right after the module is executed, so that
    a module no test file imports (common_methods_invocations takes seconds) is
    not imported for its shims."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in SHIMS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _add_missing(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Adds the missing names to the shimmed modules already imported, and to the
    others when they are."""
    for module_name in SHIMS:
        if module_name in sys.modules:
            _add_missing(sys.modules[module_name])
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
