"""torch.accinte.MemPool and use_mem_pool, with torch.cuda's 2.13 semantics:
the pool's id and use count, allocations routed to the pool's own segments on
the calling thread only, its snapshot, its memory released with it, a graph
captured into it, use_on_oom and no_split (Note [accinte graph memory])."""

import gc
import threading

import pytest
import torch

MiB = 1024 * 1024


def empty(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes, dtype=torch.uint8, device="accinte")


def pool_addresses(pool: torch.accinte.MemPool) -> list[tuple[int, int]]:
    return [(seg["address"], seg["address"] + seg["total_size"]) for seg in pool.snapshot()]


def inside(tensor: torch.Tensor, ranges: list[tuple[int, int]]) -> bool:
    return any(start <= tensor.data_ptr() < end for start, end in ranges)


@pytest.fixture(autouse=True)
def empty_allocator():
    gc.collect()
    torch.accinte.synchronize()
    torch.accinte.empty_cache()
    yield
    gc.collect()
    torch.accinte.set_per_process_memory_fraction(1.0)
    torch.accinte.empty_cache()


def test_ids_and_use_counts_follow_the_pool_and_its_contexts():
    pool, other = torch.accinte.MemPool(), torch.accinte.MemPool()
    assert pool.id[0] == 0 and other.id[0] == 0 and pool.id != other.id
    assert pool.id != torch.accinte.graph_pool_handle()  # one id space
    assert pool.use_count() == 1 and pool.allocator is None
    with torch.accinte.use_mem_pool(pool):
        assert pool.use_count() == 2
    assert pool.use_count() == 1
    assert torch.accinte.memory.MemPool is torch.accinte.MemPool


def test_allocations_in_the_context_come_from_the_pools_own_segments():
    outside_before = empty(1000)
    pool = torch.accinte.MemPool()
    with torch.accinte.use_mem_pool(pool):
        x = torch.arange(1000, dtype=torch.float32, device="accinte")
        y = x * 2
    z = empty(1000)
    ranges = pool_addresses(pool)
    assert ranges and inside(x, ranges) and inside(y, ranges)
    assert not inside(z, ranges) and not inside(outside_before, ranges)
    assert torch.equal(y.cpu(), torch.arange(1000, dtype=torch.float32) * 2)
    # A block freed in the pool goes back to the pool, not to everyone.
    freed = x.data_ptr()
    del x
    w = empty(4000)
    assert w.data_ptr() != freed and not inside(w, ranges)
    with torch.accinte.use_mem_pool(pool):
        again = empty(4000)
    assert again.data_ptr() == freed


def test_only_the_calling_thread_allocates_from_the_pool():
    pool = torch.accinte.MemPool()
    from_thread = []
    with torch.accinte.use_mem_pool(pool):
        mine = empty(1000)
        worker = threading.Thread(target=lambda: from_thread.append(empty(1000)))
        worker.start()
        worker.join()
    ranges = pool_addresses(pool)
    assert inside(mine, ranges) and not inside(from_thread[0], ranges)


def test_the_pools_memory_goes_with_it():
    pool = torch.accinte.MemPool()
    pool_id = pool.id
    with torch.accinte.use_mem_pool(pool):
        kept = empty(3 * MiB)
        dropped = empty(1000)
    del dropped
    reserved = torch.accinte.memory_reserved()
    del pool
    gc.collect()
    # The free small segment went at once; the segment of a live tensor stays ...
    assert torch.accinte.memory_reserved() == reserved - 2 * MiB
    segments = torch.accinte.memory._snapshot()["segments"]
    assert [seg["total_size"] for seg in segments
            if tuple(seg["segment_pool_id"]) == pool_id] == [20 * MiB]
    # ... until the tensor is freed and the cache emptied.
    del kept
    torch.accinte.empty_cache()
    assert torch.accinte.memory_reserved() == 0


def test_a_graph_captures_into_the_pool_and_replays_the_cpus_values():
    pool = torch.accinte.MemPool()
    static_in = torch.arange(16, dtype=torch.float32, device="accinte")
    graph = torch.accinte.Graph()
    with torch.accinte.graph(graph, pool=pool.id):
        static_out = static_in.sin() * 3
    assert pool.use_count() == 2 and inside(static_out, pool_addresses(pool))
    static_in.copy_(torch.linspace(-2, 2, 16))
    graph.replay()
    assert torch.equal(static_out.cpu(), torch.linspace(-2, 2, 16).sin() * 3)
    graph.reset()
    assert pool.use_count() == 1


@pytest.mark.parametrize("use_on_oom", [True, False])
def test_use_on_oom_lends_the_pools_free_blocks_when_the_device_is_full(use_on_oom):
    capacity = torch.accinte.get_device_properties(0).total_memory
    torch.accinte.set_per_process_memory_fraction(64 * MiB / capacity)
    pool = torch.accinte.MemPool(use_on_oom=use_on_oom)
    with torch.accinte.use_mem_pool(pool):
        cached = empty(40 * MiB)
    freed = cached.data_ptr()
    del cached  # a free 40 MiB block, kept by the pool
    if use_on_oom:
        lent = empty(40 * MiB)
        assert lent.data_ptr() == freed
        assert int(lent.fill_(3).sum()) == 3 * 40 * MiB
    else:
        with pytest.raises(torch.OutOfMemoryError, match="accinte out of memory"):
            empty(40 * MiB)
        assert int(empty(MiB).fill_(1).sum()) == MiB  # the device keeps working


def test_no_split_gives_each_allocation_a_whole_block():
    pool = torch.accinte.MemPool(no_split=True)
    before = torch.accinte.memory_allocated()
    with torch.accinte.use_mem_pool(pool):
        a = empty(1000)
        b = empty(1000)
    assert torch.accinte.memory_allocated() - before == 2 * 2 * MiB  # a small segment each
    assert a.data_ptr() != b.data_ptr()


def test_bad_arguments_are_refused():
    with pytest.raises(NotImplementedError, match="allocator must be None"):
        torch.accinte.MemPool(allocator=object())
    with pytest.raises(TypeError, match="expected a torch.accinte.MemPool"):
        with torch.accinte.use_mem_pool((0, 1)):
            pass
    pool = torch.accinte.MemPool()
    with pytest.raises(RuntimeError, match="device"):
        with torch.accinte.use_mem_pool(pool, device=99):
            pass
    assert pool.use_count() == 1
