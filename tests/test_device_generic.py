"""PyTorch's device-generic test machinery, run on accinte.

A test class written once against a `device` argument is instantiated by
`instantiate_device_type_tests` for every device type whose test base is
active: `CPUTestBase`, and `PrivateUse1TestBase` because
`torch.accinte.is_available()` is true when common_device_type is imported
(autoload registered the backend during `import torch`). The generated
classes are TestDeviceGenericCPU and TestDeviceGenericACCINTE, with the
device (and dtype) in each test's name, e.g.
test_add_matches_cpu_accinte_float32. docs/chapters/testing.md explains the
machinery; this file is its worked example.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch
from torch.testing._internal.common_device_type import (
    PrivateUse1TestBase,
    deviceCountAtLeast,
    dtypes,
    dtypesIfPRIVATEUSE1,
    instantiate_device_type_tests,
    onlyPRIVATEUSE1,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

# A few OpInfos for the @ops test: PyTorch's own sample inputs, on each device.
SOME_OPS = [op for op in op_db if op.name in ("add", "mul", "abs", "sum", "matmul")
            and not op.variant_test_name]


# LITERALINCLUDE START: TESTING DEVICE GENERIC CLASS
class TestDeviceGeneric(TestCase):
    # The device and dtype arguments are filled in per instantiated class.
    @dtypes(torch.float32, torch.float64, torch.int64)
    @dtypesIfPRIVATEUSE1(torch.float32, torch.int64)  # replaces @dtypes on accinte
    def test_add_matches_cpu(self, device, dtype):
        a = torch.arange(12, device=device).reshape(3, 4).to(dtype)
        result = a + a.t().contiguous().t()
        self.assertEqual(result.device.type, torch.device(device).type)
        self.assertEqual(result, (a.cpu() * 2))  # TestCase.assertEqual compares across devices

    @onlyPRIVATEUSE1
    def test_runs_on_the_backend(self, device):
        self.assertEqual(torch.device(device).type, "accinte")
        self.assertEqual(self.device_type, "accinte")  # set by PrivateUse1TestBase.setUpClass

    @deviceCountAtLeast(2)
    def test_copy_between_devices(self, devices):
        x = torch.randn(5, device=devices[0])
        y = x.to(devices[1])
        self.assertEqual(y.device, torch.device(devices[1]))
        self.assertEqual(x, y, exact_device=False)

    @ops(SOME_OPS, allowed_dtypes=(torch.float32,))
    def test_samples_match_cpu(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            on_cpu = sample.transform(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t)
            expected = op(on_cpu.input, *on_cpu.args, **on_cpu.kwargs)
            self.assertEqual(op(sample.input, *sample.args, **sample.kwargs), expected,
                             exact_device=False)

    def test_sparse_round_trip(self, device):
        dense = torch.eye(3, device=device)
        self.assertEqual(dense.to_sparse().to_dense(), dense)


# Backend-wide configuration, read while the classes are instantiated: a test
# excluded by name for accinte (here, to show the mechanism), and @ops tests
# limited to the operators allowed here. Reset afterwards: the
# settings live on PrivateUse1TestBase, shared by every test file.
# dtypesIfPRIVATEUSE1 files its dtypes under the backend's name ("accinte"),
# but PrivateUse1TestBase.device_type stays "privateuse1" until its setUpClass
# runs, and PyTorch looks dtypes up by device_type. Instantiating an @ops test
# runs setUpClass on the way, and tests are instantiated in set order (string
# hashing, different in every process): without this call @dtypesIfPRIVATEUSE1
# would apply in some processes and not in others.
PrivateUse1TestBase.setUpClass()
PrivateUse1TestBase.set_test_configs(
    op_allowlist=("add", "mul", "abs"),
    test_exclusions={"TestDeviceGeneric": ["test_sparse_round_trip"]},
)
instantiate_device_type_tests(TestDeviceGeneric, globals(), only_for=("cpu", "accinte"))
PrivateUse1TestBase.set_test_configs()
# LITERALINCLUDE END: TESTING DEVICE GENERIC CLASS


def test_the_backend_classes_were_generated():
    # What the instantiation produced: one class per device type, tests named
    # after the device and dtype.
    accinte_class = globals()["TestDeviceGenericACCINTE"]
    assert issubclass(accinte_class, PrivateUse1TestBase)
    names = {name for name in dir(accinte_class) if name.startswith("test_")}
    assert "test_add_matches_cpu_accinte_float32" in names
    assert "test_add_matches_cpu_accinte_float64" not in names  # dtypesIfPRIVATEUSE1
    assert "test_samples_match_cpu_add_accinte_float32" in names
    assert "test_samples_match_cpu_matmul_accinte_float32" not in names  # op_allowlist
    assert "test_sparse_round_trip_accinte" not in names  # test_exclusions
    cpu_names = {name for name in dir(globals()["TestDeviceGenericCPU"]) if name.startswith("test_")}
    assert {"test_add_matches_cpu_cpu_float64", "test_samples_match_cpu_matmul_cpu_float32",
            "test_sparse_round_trip_cpu"} <= cpu_names


# An upstream-style test file (PyTorch's own test/*.py are written this way)
# and the launcher the testing chapter gives for running such files on accinte.
UPSTREAM_STYLE_FILE = '''
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, onlyCUDA
from torch.testing._internal.common_utils import TestCase, run_tests


class TestUpstream(TestCase):
    def test_generic(self, device):
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2)

    @onlyCUDA
    def test_written_for_cuda(self, device):
        self.assertEqual(torch.zeros(3, device=device).device.type, torch.device(device).type)


instantiate_device_type_tests(TestUpstream, globals())

if __name__ == "__main__":
    run_tests()
'''

LAUNCHER = '''
# LITERALINCLUDE START: TESTING UPSTREAM LAUNCHER
# run_upstream.py: python run_upstream.py TEST_FILE [unittest arguments]
# Runs one of PyTorch's test files with the backend's test base configured first:
# bypass_device_restrictions is read when a test runs, so it must stay set.
import runpy
import sys

from torch.testing._internal.common_device_type import PrivateUse1TestBase

PrivateUse1TestBase.bypass_device_restrictions = True  # @onlyCUDA and the like run too
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
# LITERALINCLUDE END: TESTING UPSTREAM LAUNCHER
'''


def test_upstream_test_files_run_on_accinte_with_the_launcher(tmp_path):
    """The launcher runs an upstream-style file: PYTORCH_TESTING_DEVICE_ONLY_FOR
    keeps accinte's classes only, and the @onlyCUDA test runs instead of skipping."""
    (tmp_path / "test_upstream.py").write_text(UPSTREAM_STYLE_FILE)
    (tmp_path / "run_upstream.py").write_text(LAUNCHER)
    # Without CI in the environment, as a developer runs it: with CI set, PyTorch's
    # run_tests writes XML reports through xmlrunner, which the suite does not install.
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "accinte"

    def run(*command: str) -> str:
        result = subprocess.run([sys.executable, *command, "-v"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stderr

    plain = run("test_upstream.py")
    assert "test_generic_accinte" in plain and "_cpu" not in plain  # only accinte's classes
    assert "test_written_for_cuda_accinte" in plain and "skipped 'Only runs on cuda'" in plain
    bypassed = run("run_upstream.py", "test_upstream.py")
    assert "skipped" not in bypassed and "Ran 2 tests" in bypassed
