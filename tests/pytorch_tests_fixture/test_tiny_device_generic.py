"""A device-generic test file as PyTorch writes them, small: instantiated for the
CPU and the backend, with a test of each kind the runner has to tell apart."""

import os

import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyPRIVATEUSE1,
)
from torch.testing._internal.common_utils import TestCase, run_tests, skipIfMps  # a shim


class TestTiny(TestCase):
    @dtypes(torch.float32, torch.int64)
    def test_add(self, device, dtype):
        a = torch.arange(6, device=device, dtype=dtype)
        self.assertEqual((a + a).cpu(), torch.arange(0, 12, 2, dtype=dtype))

    @skipIfMps
    def test_sum(self, device):
        self.assertEqual(torch.ones(4, device=device).sum().item(), 4.0)

    def test_fails_on_device(self, device):
        self.assertEqual(torch.device(device).type, "cpu", "the device is not the CPU")

    def test_crashes_on_device(self, device):
        if torch.device(device).type != "cpu":
            os.abort()

    def test_leaves_an_error_pending(self, device):
        # A bad index is data: an asynchronous device may report it at a later
        # synchronize, as CUDA does (accinte queues every call of a signature but
        # the first). The runner synchronizes after each device test, so the error
        # fails this test, not the next one.
        x = torch.arange(4.0, device=device)
        torch.gather(x, 0, torch.tensor([0, 1], device=device))
        try:
            torch.gather(x, 0, torch.tensor([0, 9], device=device))
        except RuntimeError:
            pass  # at the call, as on the CPU

    def test_fails_everywhere(self, device):
        raise AssertionError("fails on every device")

    def test_disabled_crash(self, device):
        if torch.device(device).type != "cpu":
            os.abort()

    def test_documented_failure(self, device):
        self.assertEqual(torch.device(device).type, "cpu", "assumes the CPU")

    def test_documented_but_passes(self, device):
        pass

    def test_skipped_everywhere(self, device):
        self.skipTest("skipped by the test itself")

    @onlyPRIVATEUSE1
    def test_device_only(self, device):
        self.assertNotEqual(torch.device(device).type, "cpu")

    @onlyPRIVATEUSE1
    def test_device_only_fails(self, device):
        raise AssertionError("fails with no CPU twin to compare with")


instantiate_device_type_tests(TestTiny, globals())

if __name__ == "__main__":
    run_tests()
