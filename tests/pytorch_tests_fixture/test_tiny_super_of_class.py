"""A device-generic file in the style of 2023's test_linalg.py: its setUp and
tearDown call super(self.__class__, self), which recurses in the device classes
PyTorch 2.13 generates unless the runner's shim bridges them
(tools/pytorch_tests/child/pytorch_tests_compat.py)."""

import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests


class TestOldSetUp(TestCase):
    def setUp(self):
        super(self.__class__, self).setUp()
        self.set_up = True

    def tearDown(self):
        del self.set_up
        super(self.__class__, self).tearDown()

    def test_set_up(self, device):
        self.assertTrue(self.set_up)
        self.assertEqual(self.super_id(), self.id())

    def test_sum(self, device):
        self.assertEqual(torch.ones(4, device=device).sum().item(), 4.0)

    def super_id(self):
        return super().id()  # super() without arguments works too


instantiate_device_type_tests(TestOldSetUp, globals())

if __name__ == "__main__":
    run_tests()
