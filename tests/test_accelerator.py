"""Every torch.accelerator function works with accinte as the accelerator.

torch.accelerator.Graph, the one class of the module, has tests of its own
(tests/test_graphs.py, with torch.accinte.graph).
"""

import torch

MiB = 2**20


def test_device_functions():
    acc = torch.accelerator
    assert acc.is_available()
    assert acc.current_accelerator() == torch.device("accinte")
    assert acc.current_accelerator(check_available=True) == torch.device("accinte")
    assert acc.device_count() == torch.accinte.device_count()
    assert acc.current_device_index() == 0
    acc.set_device_index(1)
    try:
        assert acc.current_device_index() == torch.accinte.current_device() == 1
    finally:
        acc.set_device_index(0)
    with acc.device_index(1):
        assert torch.accinte.current_device() == 1
    assert "supported_dtypes" in acc.get_device_capability(0)


def test_stream_functions():
    acc = torch.accelerator
    assert acc.current_stream() == torch.accinte.current_stream()
    s = torch.Stream("accinte")
    acc.set_stream(s)
    try:
        assert acc.current_stream() == s
        torch.accinte._sleep(100)
        assert not s.query()
        acc.synchronize()
        assert s.query()
    finally:
        acc.set_stream(torch.accinte.default_stream())


def test_memory_functions():
    mem = torch.accelerator.memory
    mem.reset_peak_memory_stats()
    mem.reset_accumulated_memory_stats()
    base = mem.memory_allocated()
    x = torch.empty(MiB, dtype=torch.uint8, device="accinte")
    assert mem.memory_allocated() == base + MiB
    assert mem.memory_reserved() >= base + MiB
    assert mem.max_memory_allocated() >= base + MiB
    assert mem.max_memory_reserved() >= base + MiB
    assert mem.memory_stats()["allocation.all.allocated"] == 1
    free, total = mem.get_memory_info()
    assert total == torch.accinte.get_device_properties().total_memory and free < total
    del x
    mem.empty_cache()
    assert mem.memory_allocated() == base


def test_host_cache():
    x = torch.ones(1000).pin_memory()
    assert x.is_pinned()
    del x
    torch.accelerator.memory.empty_host_cache()
    assert torch.ones(10).pin_memory().is_pinned()

