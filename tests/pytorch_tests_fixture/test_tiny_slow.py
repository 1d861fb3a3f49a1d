"""A device-generic file that outlasts any budget the runner's tests give it."""

import time

from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase


class TestSlow(TestCase):
    def test_sleeps(self, device):
        time.sleep(600)


instantiate_device_type_tests(TestSlow, globals())
