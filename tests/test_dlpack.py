"""DLPack on accinte: the protocol methods and the capsule functions, both
ways, sharing memory on every device (torch_accinte/accinte/_dlpack.py)."""

import pytest
import torch
from torch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack


@pytest.mark.parametrize("index", [0, 1])
def test_from_dlpack_shares_the_tensor_through_the_protocol(index):
    t = torch.arange(12.0, device=f"accinte:{index}").reshape(3, 4)[:, 1:]
    assert t.__dlpack_device__() == (DLDeviceType.kDLExtDev, index)
    shared = torch.from_dlpack(t)
    assert shared.device == t.device
    assert shared.data_ptr() == t.data_ptr() and shared.stride() == t.stride()
    shared.mul_(-1)
    expected = -torch.arange(12.0).reshape(3, 4)[:, 1:]
    assert torch.equal(t.cpu(), expected)


@pytest.mark.parametrize("index", [0, 1])
def test_capsules_both_ways(index):
    t = torch.randn(5, device=f"accinte:{index}")
    back = from_dlpack(to_dlpack(t))
    assert back.device == t.device and back.data_ptr() == t.data_ptr()
    again = torch.from_dlpack(t.__dlpack__())
    assert again.data_ptr() == t.data_ptr()
    assert torch.equal(again.cpu(), t.cpu())


def test_other_devices_keep_torchs_method():
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)

    class Logged(torch.Tensor):
        seen = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    sub = torch.ones(2, device="accinte").as_subclass(Logged)
    assert sub.__dlpack_device__()[0] == DLDeviceType.kDLExtDev
    assert any("dlpack_device" in name for name in Logged.seen)  # dispatched to the subclass
