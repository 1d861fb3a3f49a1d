"""Steering the caching allocator, as on CUDA: a memory pool of one's own
(torch.accinte.MemPool, use_mem_pool), a graph captured into it, and the
PYTORCH_ALLOC_CONF settings changed at run time.

    python examples/memory_pools.py
    PYTORCH_ALLOC_CONF=max_split_size_mb:64 python examples/memory_pools.py
"""

import torch
import torch_accinte  # noqa: F401  (registers the device; torch also autoloads it)

MiB = 1 << 20

# A pool: allocations of this thread inside the context come from its segments.
pool = torch.accinte.MemPool()
with torch.accinte.use_mem_pool(pool):
    inputs = torch.linspace(-3, 3, 4096, device="accinte")
    print(f"inside use_mem_pool: use_count() = {pool.use_count()}")
segments = pool.snapshot()
print(f"pool {pool.id}: {len(segments)} segment(s), "
      f"{sum(s['total_size'] for s in segments) // MiB} MiB")
assert any(s["address"] <= inputs.data_ptr() < s["address"] + s["total_size"]
           for s in segments)

# A graph captured into the same pool keeps its outputs there too.
graph = torch.accinte.Graph()
with torch.accinte.graph(graph, pool=pool.id):
    outputs = torch.tanh(inputs) * 2
graph.replay()
assert torch.equal(outputs.cpu(), torch.tanh(inputs.cpu()) * 2)
print(f"graph replayed into the pool: use_count() = {pool.use_count()}")
del graph, outputs, inputs

# Deleting the pool returns its free segments to the device.
reserved = torch.accinte.memory_reserved()
del pool
print(f"reserved: {reserved // MiB} MiB with the pool, "
      f"{torch.accinte.memory_reserved() // MiB} MiB after")
assert torch.accinte.memory_reserved() < reserved

# Settings at run time: requests round to quarters between powers of two.
torch.accinte.memory._set_allocator_settings("roundup_power2_divisions:4")
before = torch.accinte.memory_allocated()
block = torch.empty(1_100_000, dtype=torch.uint8, device="accinte")
rounded = torch.accinte.memory_allocated() - before
print(f"1,100,000 bytes take a block of {rounded:,} bytes (1 MiB + 1/4 MiB)")
assert rounded == MiB + MiB // 4
stats = torch.accinte.memory_stats()
print(f"max_split_size: {stats['max_split_size']} bytes (-1 without max_split_size_mb)")
print("memory pools and allocator settings work on accinte as on CUDA")
