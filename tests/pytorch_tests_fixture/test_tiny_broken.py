"""A device-generic file that imports a name no torch has: its collection fails."""

from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, no_such_helper  # noqa: F401


class TestBroken(TestCase):
    def test_never_collected(self, device):
        pass


instantiate_device_type_tests(TestBroken, globals())
