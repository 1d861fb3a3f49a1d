"""What older PyTorch test files need of torch.testing._internal that the
installed torch moved, dropped or changed.

A test tree is older than the torch it runs against (here a 2023 tree on
torch 2.13), and its files import helpers of torch.testing._internal by name.
install() adapts the modules the old files import from, when they are imported:

- SHIMS: each missing name, written here for this purpose, is added; a name
  the installed torch still has is never replaced. Add one when a file's
  collection fails with "cannot import name".
- WRAPS: a function whose behaviour changed is wrapped, so that what the old
  files relied on holds again and nothing changes for files that did not rely
  on it. Add one when every test of a file fails on both devices the same way
  for a reason of the test machinery.
"""

from __future__ import annotations

import dis
import functools
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


def _calls_super_of_its_class(function) -> bool:
    """Whether `function` calls super(self.__class__, self): super of the class
    of the instance, its first argument, rather than of the defining class."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_argcount == 0:
        return False
    ops = list(dis.get_instructions(code))
    return any(a.opname == "LOAD_GLOBAL" and a.argval == "super"
               and b.opname == "LOAD_FAST" and b.argval == code.co_varnames[0]
               and c.opname == "LOAD_ATTR" and c.argval == "__class__"
               for a, b, c in zip(ops, ops[1:], ops[2:]))


def _bridge(generic, names):
    """A subclass of `generic` whose methods `names` call those that follow
    `generic` in the method resolution order."""
    def delegate(name):
        def method(self, *args, **kwargs):
            return getattr(super(generic, self), name)(*args, **kwargs)
        method.__name__ = method.__qualname__ = name
        return method

    members = {name: delegate(name) for name in names}
    members["__module__"] = generic.__module__
    return type(f"{generic.__name__}SuperOfClassBridge", (generic,), members)


def _instantiate_device_type_tests(instantiate):
    """common_device_type.instantiate_device_type_tests for generic classes
    whose methods call super(self.__class__, self) (2023's TestLinalg.setUp
    and tearDown).

    Until 2023 a device class derived from a member-less copy of the generic
    class, whose methods (setUp among them) were copied onto the device class:
    self.__class__ was the class that held the method, and super of it reached
    TestCase. Since then the device class derives from the generic class
    itself (so that super() without arguments works in its methods), and still
    holds copies of them: super(self.__class__, self).setUp() finds the
    generic class's setUp again, which calls itself until RecursionError, in
    every test on every device. The wrapper puts a bridge between the device
    class's test base and the generic class, whose methods of those names go
    on past the generic class, as the copy's did."""
    @functools.wraps(instantiate)
    def instantiate_device_type_tests(generic_test_class, scope, *args, **kwargs):
        names = [name for name, member in vars(generic_test_class).items()
                 if _calls_super_of_its_class(member)]
        before = dict(scope)
        instantiate(generic_test_class, scope, *args, **kwargs)
        if not names:
            return
        bridge = _bridge(generic_test_class, names)
        for name, member in scope.items():
            if (before.get(name) is not member and isinstance(member, type)
                    and generic_test_class in member.__bases__):
                member.__bases__ = tuple(bridge if base is generic_test_class else base
                                         for base in member.__bases__)

    return instantiate_device_type_tests


# module -> {name: factory}: factory() makes the value when the module lacks the name.
SHIMS = {
    "torch.testing._internal.common_utils": {"skipIfMps": _skip_if_mps},
    "torch.testing._internal.common_methods_invocations": {
        "binary_ufuncs_and_refs": _binary_ufuncs_and_refs},
    "torch.testing._internal.common_cuda": {"tf32_is_not_fp32": _tf32_is_not_fp32},
    "torch.testing._internal.common_nn": {"new_module_tests": _new_module_tests},
}
# module -> {name: wrap}: wrap(the module's function) replaces it.
WRAPS = {
    "torch.testing._internal.common_device_type": {
        "instantiate_device_type_tests": _instantiate_device_type_tests},
}
MODULES = set(SHIMS) | set(WRAPS)
added: list[str] = []  # "module.name" of every name added or wrapped so far


def _adapt(module) -> None:
    for name, factory in SHIMS.get(module.__name__, {}).items():
        if not hasattr(module, name):
            setattr(module, name, factory())
            added.append(f"{module.__name__}.{name}")
    for name, wrap in WRAPS.get(module.__name__, {}).items():
        function = getattr(module, name)
        if not getattr(function, "_pytorch_tests_compat", False):
            wrapped = wrap(function)
            wrapped._pytorch_tests_compat = True
            setattr(module, name, wrapped)
            added.append(f"{module.__name__}.{name}")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Adapts a module right after it is executed, so that a module no test
    file imports (common_methods_invocations takes seconds) is not imported
    for its shims."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _adapt(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Adapts the modules already imported, and the others when they are."""
    for module_name in MODULES:
        if module_name in sys.modules:
            _adapt(sys.modules[module_name])
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
