"""Device memory on accinte, as with torch.cuda: the caching allocator keeps
freed blocks for reuse (memory_allocated falls, memory_reserved does not),
empty_cache returns them to the runtime, memory_stats and memory_summary
report it all, and a memory snapshot records who allocated what.
"""

import torch

device = torch.device("accinte")
mem = torch.accinte
torch.accinte.synchronize()
mem.empty_cache()
mem.reset_peak_memory_stats()
base_allocated, base_reserved = mem.memory_allocated(), mem.memory_reserved()
MiB = 1 << 20


def line(label: str) -> None:
    print(f"{label:<34} allocated {(mem.memory_allocated() - base_allocated) / MiB:6.1f} MiB, "
          f"reserved {(mem.memory_reserved() - base_reserved) / MiB:6.1f} MiB")


# 1. Allocation and caching.
x = torch.empty(8 * MiB // 4, device=device)  # 8 MiB of float32
line("after allocating 8 MiB:")
assert mem.memory_allocated() - base_allocated == 8 * MiB
assert mem.memory_reserved() - base_reserved >= 8 * MiB
pointer = x.data_ptr()
del x
line("after freeing it:")
assert mem.memory_allocated() == base_allocated
assert mem.memory_reserved() - base_reserved >= 8 * MiB  # kept in the cache
y = torch.empty(8 * MiB // 4, device=device)
print("the next allocation of that size reuses the cached block:", y.data_ptr() == pointer)
assert y.data_ptr() == pointer
del y

# 2. empty_cache returns unused blocks to the runtime (acFree).
mem.empty_cache()
line("after empty_cache:")
assert mem.memory_reserved() == base_reserved

# 3. Statistics: the keys of torch.cuda.memory_stats, and peaks.
stats = mem.memory_stats()
peak = mem.max_memory_allocated() - base_allocated
print(f"peak allocated: {peak / MiB:.1f} MiB; "
      f"allocations so far: {stats['allocation.all.allocated']}; "
      f"acMalloc calls: {stats['num_device_alloc']}, acFree calls: {stats['num_device_free']}")
assert peak == 8 * MiB
assert stats["allocated_bytes.all.current"] == mem.memory_allocated()
free, total = mem.mem_get_info()
print(f"mem_get_info: {free / MiB:.0f} MiB free of {total / MiB:.0f} MiB")
assert 0 < free <= total
print(mem.memory_summary(abbreviated=True))

# 4. A snapshot with history: which blocks are live, and the Python stack
#    that allocated each one (readable by PyTorch's memory visualiser).
mem.memory._record_memory_history(stacks="python", max_entries=1000)


def allocate_weights() -> torch.Tensor:
    return torch.ones(256, 1024, device=device)  # 1 MiB


weights = allocate_weights()
snapshot = mem.memory._snapshot()
mem.memory._record_memory_history(enabled=None)
live = [block for segment in snapshot["segments"] for block in segment["blocks"]
        if block["state"] == "active_allocated" and block["address"] == weights.data_ptr()]
assert len(live) == 1, live
frames = [frame["name"] for frame in live[0]["frames"]]
print(f"snapshot: {len(snapshot['segments'])} segment(s); the weights' block "
      f"({live[0]['size'] // 1024} KiB) was allocated in {frames[0]}()")
assert "allocate_weights" in frames
actions = {entry["action"] for trace in snapshot["device_traces"] for entry in trace}
print("trace actions:", sorted(actions))
assert "alloc" in actions
print("memory statistics, caching and snapshots work on accinte")
