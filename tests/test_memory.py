"""Device memory: allocator statistics, memory info, out-of-memory errors."""

import pytest
import torch

MiB = 1024 * 1024


def test_memory_allocated_follows_tensors():
    torch.accinte.synchronize()
    before = torch.accinte.memory_allocated()
    x = torch.empty(MiB, dtype=torch.uint8, device="accinte")
    assert torch.accinte.memory_allocated() == before + MiB
    assert torch.accinte.memory_allocated("accinte:1") == torch.accinte.memory_allocated(1)
    del x
    assert torch.accinte.memory_allocated() == before


def test_memory_is_accounted_per_device():
    before0, before1 = torch.accinte.memory_allocated(0), torch.accinte.memory_allocated(1)
    y = torch.empty(2 * MiB, dtype=torch.uint8, device="accinte:1")
    assert torch.accinte.memory_allocated(0) == before0
    assert torch.accinte.memory_allocated(1) == before1 + 2 * MiB
    del y


def test_peak_and_reset():
    torch.accinte.reset_peak_memory_stats()
    base = torch.accinte.memory_allocated()
    x = torch.empty(4 * MiB, dtype=torch.uint8, device="accinte")
    del x
    assert torch.accinte.max_memory_allocated() >= base + 4 * MiB
    assert torch.accinte.max_memory_reserved() >= base + 4 * MiB
    torch.accinte.reset_peak_memory_stats()
    assert torch.accinte.max_memory_allocated() == torch.accinte.memory_allocated() == base


def test_memory_stats_keys_and_counts():
    torch.accinte.reset_accumulated_memory_stats()
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="accinte")  # large pool
    y = torch.empty(16, dtype=torch.uint8, device="accinte")  # small pool
    stats = torch.accinte.memory_stats()
    for key in ["allocated_bytes.all.current", "reserved_bytes.all.peak", "active.all.current",
                "segment.all.current", "requested_bytes.all.allocated", "num_ooms",
                "allocation.large_pool.allocated", "allocation.small_pool.allocated"]:
        assert key in stats, key
    assert stats["allocation.all.allocated"] == 2
    assert stats["allocation.large_pool.allocated"] == 1
    assert stats["allocation.small_pool.allocated"] == 1
    assert stats["allocated_bytes.all.current"] == torch.accinte.memory_allocated()
    del x, y
    stats = torch.accinte.memory_stats()
    assert stats["allocation.all.freed"] == 2
    torch.accinte.reset_accumulated_memory_stats()
    assert torch.accinte.memory_stats()["allocation.all.allocated"] == 0


def test_mem_get_info_tracks_reserved_memory():
    # The runtime sees segments (reserved memory), not tensors: an 8 MiB
    # tensor takes a 20 MiB large-pool segment, which stays cached after the
    # tensor dies until empty_cache returns it.
    torch.accinte.empty_cache()
    free, total = torch.accinte.mem_get_info()
    reserved = torch.accinte.memory_reserved()
    x = torch.empty(8 * MiB, dtype=torch.uint8, device="accinte")
    free_after, total_after = torch.accinte.mem_get_info()
    assert total_after == total
    assert torch.accinte.memory_reserved() - reserved == 20 * MiB
    assert free - free_after == 20 * MiB
    del x
    assert torch.accinte.mem_get_info()[0] == free_after
    torch.accinte.empty_cache()
    assert torch.accinte.mem_get_info()[0] == free


def test_out_of_memory_is_a_clear_error_and_device_survives(run_python):
    out = run_python(
        """
        import torch
        keep = torch.empty(40 * 2**20, dtype=torch.uint8, device="accinte")
        try:
            torch.empty(40 * 2**20, dtype=torch.uint8, device="accinte")
        except torch.OutOfMemoryError as e:
            print("OOM:", e)
        print("ooms", torch.accinte.memory_stats()["num_ooms"])
        del keep
        x = torch.empty(40 * 2**20, dtype=torch.uint8, device="accinte").fill_(3)
        print("after", x[-1].item())
        """,
        env={"ACCINTE_DEVICE_MEMORY": "64M"},
    )
    assert out.returncode == 0, out.stderr
    assert "OOM: accinte out of memory on device accinte:0" in out.stdout
    assert "tried to allocate 40.00 MiB (41943040 bytes)" in out.stdout
    assert "64.00 MiB in total" in out.stdout
    assert "ooms 1" in out.stdout
    assert "after 3" in out.stdout


def test_oom_in_process_keeps_device_working():
    total = torch.accinte.get_device_properties(0).total_memory
    with pytest.raises(torch.OutOfMemoryError, match="accinte out of memory"):
        torch.empty(total + 1, dtype=torch.uint8, device="accinte")
    assert (torch.ones(3, device="accinte") * 2).sum().item() == 6


def test_resize_storage_grows_in_place():
    t = torch.arange(4.0, device="accinte")
    storage = t.untyped_storage()
    storage.resize_(8 * 4)
    assert storage.nbytes() == 32
    assert torch.equal(t.cpu(), torch.arange(4.0))
    t.resize_(8)
    t[4:] = 7
    assert t.cpu().tolist() == [0, 1, 2, 3, 7, 7, 7, 7]
