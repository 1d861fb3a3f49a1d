"""The caching device allocator (csrc/runtime/AccInteCachingAllocator): reuse,
size classes, splitting and merging, streams and record_stream, empty_cache,
free-and-retry on out-of-memory, the per-process fraction, fragmentation.

Addresses prove reuse: a block handed out again has the same data_ptr.
"""

import gc
import random

import pytest
import torch

from held_stream import hold_stream

KiB = 1024
MiB = 1024 * KiB


def empty(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes, dtype=torch.uint8, device="accinte")


def stats() -> dict:
    return torch.accinte.memory_stats()


def delta(before: dict, after: dict, key: str) -> int:
    return after[key] - before[key]


@pytest.fixture(autouse=True)
def empty_allocator():
    """Each test starts with no cached memory on device 0: every segment is
    released, so the numbers below are exact."""
    gc.collect()  # tensors kept alive only by reference cycles of earlier tests
    torch.accinte.synchronize()
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved(0) == 0, (
        "a tensor on accinte:0 outlived an earlier test: " + torch.accinte.memory_summary(0)
    )
    yield
    torch.accinte.synchronize()


# ---- reuse and size classes --------------------------------------------------


def test_freed_block_is_reused_without_a_runtime_call():
    x = empty(100 * KiB)
    ptr = x.data_ptr()
    del x
    assert torch.accinte.memory_reserved() == 2 * MiB  # cached, not returned
    before = stats()
    y = empty(100 * KiB)
    assert y.data_ptr() == ptr
    assert delta(before, stats(), "num_device_alloc") == 0


def test_requests_are_rounded_up_to_512_bytes():
    before = stats()
    x = empty(1)
    after = stats()
    assert delta(before, after, "allocated_bytes.all.current") == 512
    assert delta(before, after, "requested_bytes.all.current") == 1
    y = empty(513)
    assert delta(after, stats(), "allocated_bytes.all.current") == 1024
    assert y.data_ptr() == x.data_ptr() + 512  # carved from the same segment


@pytest.mark.parametrize(
    "nbytes, pool, segment",
    [
        (1, "small_pool", 2 * MiB),             # small requests share 2 MiB segments
        (MiB, "small_pool", 2 * MiB),           # 1 MiB is the largest small request
        (MiB + 1, "large_pool", 20 * MiB),      # under 10 MiB: a shared 20 MiB segment
        (9 * MiB, "large_pool", 20 * MiB),
        (11 * MiB + 1, "large_pool", 12 * MiB), # 10 MiB and up: rounded to 2 MiB
    ],
)
def test_segment_size_classes(nbytes, pool, segment):
    x = empty(nbytes)
    s = stats()
    assert s[f"segment.{pool}.current"] == 1
    assert s[f"reserved_bytes.{pool}.current"] == segment
    assert s["reserved_bytes.all.current"] == segment
    assert s[f"allocation.{pool}.current"] == 1
    del x


def test_large_remainder_of_one_mib_or_less_is_not_split_off():
    x = empty(19 * MiB)  # a 20 MiB segment; the 1 MiB rest stays with the block
    s = stats()
    assert s["allocated_bytes.large_pool.current"] == 20 * MiB
    assert s["requested_bytes.large_pool.current"] == 19 * MiB
    assert s["inactive_split.large_pool.current"] == 0
    del x


def test_blocks_split_a_segment_and_merge_back():
    a, b, c = empty(4 * KiB), empty(4 * KiB), empty(4 * KiB)
    a_ptr = a.data_ptr()
    assert (b.data_ptr(), c.data_ptr()) == (a_ptr + 4 * KiB, a_ptr + 8 * KiB)
    s = stats()
    assert s["segment.small_pool.current"] == 1
    # The rest of the segment is one inactive split block.
    assert s["inactive_split.small_pool.current"] == 1
    assert s["inactive_split_bytes.small_pool.current"] == 2 * MiB - 12 * KiB

    del b
    s = stats()
    assert s["inactive_split.small_pool.current"] == 2
    assert s["inactive_split_bytes.small_pool.current"] == 2 * MiB - 8 * KiB

    del a  # merges with b's free block
    s = stats()
    assert s["inactive_split.small_pool.current"] == 2
    assert s["inactive_split_bytes.small_pool.current"] == 2 * MiB - 4 * KiB
    d = empty(8 * KiB)  # fits the merged block exactly
    assert d.data_ptr() == a_ptr

    del c, d  # everything merges: one whole, unsplit, releasable segment
    s = stats()
    assert s["inactive_split.small_pool.current"] == 0
    assert s["inactive_split_bytes.small_pool.current"] == 0
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved() == 0


def test_statistics_follow_cuda_semantics():
    before = stats()
    x = empty(3000)
    after = stats()
    for key, change in [
        ("allocation.all.current", 1), ("allocation.small_pool.allocated", 1),
        ("active.all.current", 1), ("segment.small_pool.current", 1),
        ("allocated_bytes.all.current", 3072), ("active_bytes.all.current", 3072),
        ("requested_bytes.all.current", 3000), ("reserved_bytes.small_pool.current", 2 * MiB),
        ("num_device_alloc", 1), ("allocation.large_pool.current", 0),
    ]:
        assert delta(before, after, key) == change, key
    del x
    s = stats()
    assert delta(after, s, "allocation.all.freed") == 1
    assert delta(after, s, "allocated_bytes.all.freed") == 3072
    assert s["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert s["reserved_bytes.all.current"] == 2 * MiB  # the segment stays cached
    assert s["num_alloc_retries"] == before["num_alloc_retries"]


def test_memory_summary_is_a_table_of_the_statistics():
    x = empty(3 * MiB)
    summary = torch.accinte.memory_summary()
    assert "accinte memory summary, device accinte:0" in summary
    for row in ["Allocated memory", "Reserved memory", "Non-releasable memory",
                "Allocations", "from large pool", "from small pool"]:
        assert row in summary, row
    assert "20.0 MiB" in summary  # the reserved large segment
    assert "from small pool" not in torch.accinte.memory_summary(abbreviated=True)
    del x


# ---- streams -----------------------------------------------------------------------


def test_blocks_belong_to_their_allocation_stream():
    x = empty(64 * KiB)
    ptr = x.data_ptr()
    del x
    side = torch.accinte.Stream()
    with torch.accinte.stream(side):
        y = empty(64 * KiB)
    assert y.data_ptr() != ptr  # another stream's free block is not handed out
    z = empty(64 * KiB)
    assert z.data_ptr() == ptr  # its own stream gets it back


def test_same_stream_reuse_is_immediate_even_while_the_stream_is_busy():
    x = empty(64 * KiB)
    ptr = x.data_ptr()
    with hold_stream() as hold:
        del x
        y = empty(64 * KiB)  # stream order makes this safe: no wait
        assert y.data_ptr() == ptr
        assert hold.held()


def test_record_stream_delays_reuse_until_that_stream_is_done():
    side = torch.accinte.Stream()
    x = empty(64 * KiB)
    ptr = x.data_ptr()
    with torch.accinte.stream(side), hold_stream():
        x.record_stream(side)
        del x
        s = stats()
        # Freed by the user but still active: it waits for an event on `side`.
        assert s["active.all.current"] - s["allocation.all.current"] == 1
        with torch.accinte.stream(torch.accinte.default_stream()):
            y = empty(64 * KiB)
        assert y.data_ptr() != ptr
    side.synchronize()
    z = empty(64 * KiB)
    assert z.data_ptr() == ptr
    assert stats()["active.all.current"] == stats()["allocation.all.current"]


def _read_on_busy_stream_then_free(record: bool) -> torch.Tensor:
    """Queues a read of `src` on a busy side stream, frees `src`, overwrites
    whatever block the default stream gets next, returns what the side stream read."""
    side = torch.accinte.Stream()
    src = torch.full((MiB,), 3.0, device="accinte")
    out = torch.zeros(MiB, device="accinte")
    side.wait_stream(torch.accinte.current_stream())
    default = torch.accinte.current_stream()
    with torch.accinte.stream(side), hold_stream():
        out.copy_(src)  # runs once the hold ends
        with torch.accinte.stream(default):
            if record:
                src.record_stream(side)
            del src
            junk = torch.empty(MiB, device="accinte")
            junk.fill_(-1.0)
            default.synchronize()  # the fill has landed; the copy has not run
    side.synchronize()
    return out.cpu()


def test_record_stream_keeps_memory_intact_for_the_other_stream():
    assert torch.all(_read_on_busy_stream_then_free(record=True) == 3.0)


def test_without_record_stream_the_memory_is_reused_at_once():
    # As in CUDA: a use on another stream that is not recorded is the
    # caller's bug; the freed block goes straight back to its stream.
    assert torch.all(_read_on_busy_stream_then_free(record=False) == -1.0)


# ---- releasing memory ----------------------------------------------------------------


def test_empty_cache_returns_free_segments_to_the_runtime():
    free = torch.accinte.mem_get_info()[0]
    x = empty(30 * MiB)
    del x
    assert torch.accinte.memory_reserved() == 30 * MiB
    assert torch.accinte.mem_get_info()[0] == free - 30 * MiB
    before = stats()
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved() == 0
    assert torch.accinte.mem_get_info()[0] == free
    assert delta(before, stats(), "num_device_free") == 1


def test_empty_cache_keeps_segments_in_use():
    a, b = empty(4 * KiB), empty(4 * KiB)
    del b
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved() == 2 * MiB  # a still lives in it
    del a


def test_full_device_frees_the_cache_and_retries(run_python):
    out = run_python(
        """
        import torch
        MiB = 2**20
        x = torch.empty(30 * MiB, dtype=torch.uint8, device="accinte")
        del x  # 30 MiB stay cached
        y = torch.empty(40 * MiB, dtype=torch.uint8, device="accinte")  # 70 > 64: retry
        s = torch.accinte.memory_stats()
        print("retry", s["num_alloc_retries"], s["num_ooms"], s["num_device_free"],
              s["reserved_bytes.all.current"] // MiB)

        # A block still awaited by a busy stream is waited for, then released.
        side = torch.accinte.Stream()
        del y
        z = torch.empty(20 * MiB, dtype=torch.uint8, device="accinte")
        with torch.accinte.stream(side):
            torch.accinte._sleep(300)
        z.record_stream(side)
        del z
        w = torch.empty(60 * MiB, dtype=torch.uint8, device="accinte")
        s = torch.accinte.memory_stats()
        print("events", s["num_alloc_retries"], s["num_ooms"], side.query())
        """,
        env={"ACCINTE_DEVICE_MEMORY": "64M"},
    )
    assert out.returncode == 0, out.stderr
    assert "retry 1 0 1 40" in out.stdout
    assert "events 2 0 True" in out.stdout


def test_per_process_memory_fraction_caps_reserved_memory():
    total = torch.accinte.get_device_properties(0).total_memory
    assert torch.accinte.get_per_process_memory_fraction() == 1.0
    torch.accinte.set_per_process_memory_fraction(0.01, 0)
    try:
        assert torch.accinte.get_per_process_memory_fraction(0) == 0.01
        x = empty(30 * MiB)
        cap = f"{int(total * 0.01) / MiB:.2f} MiB"
        with pytest.raises(torch.OutOfMemoryError, match=rf"at most {cap} \(set_per_process"):
            empty(20 * MiB)
        y = empty(4 * KiB)  # still within the cap: 30 MiB + a 2 MiB small segment
        del x, y
    finally:
        torch.accinte.set_per_process_memory_fraction(1.0, 0)
    z = empty(60 * MiB)
    del z
    with pytest.raises(ValueError, match="Allowed range"):
        torch.accinte.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError, match="float"):
        torch.accinte.set_per_process_memory_fraction(1)


# ---- fragmentation -----------------------------------------------------------------


def test_varying_sizes_reach_a_bounded_steady_state():
    rng = random.Random(0)
    choices = [512, 4 * KiB, 100 * KiB, 700 * KiB, 3 * MiB, 5 * MiB, 12 * MiB, 30 * MiB]
    torch.accinte.reset_peak_memory_stats()
    reserved, device_allocs = [], []
    for _ in range(400):
        live = [empty(rng.choice(choices)) for _ in range(rng.randint(1, 6))]
        # Free in a random order, as autograd does.
        rng.shuffle(live)
        while live:
            live.pop()
        reserved.append(torch.accinte.memory_reserved())
        device_allocs.append(stats()["num_device_alloc"])
    peak_allocated = torch.accinte.max_memory_allocated()
    # After a warm-up the cache serves nearly everything: at most two new
    # segments in 300 steps (for size mixes not seen before) ...
    assert device_allocs[-1] - device_allocs[99] <= 2
    # ... and free pieces merge back, so what is reserved stays close to the
    # most that was ever in use at once.
    assert max(reserved) <= peak_allocated + 40 * MiB


def test_training_loop_needs_no_new_memory_after_warm_up():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    ).to("accinte")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, 32, 64)
    target = torch.randint(0, 10, (8, 32))
    device_allocs = []
    for step in range(8):
        x, y = data[step].to("accinte"), target[step].to("accinte")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        device_allocs.append(stats()["num_device_alloc"])
    assert device_allocs[-1] == device_allocs[2]
    del model, opt
