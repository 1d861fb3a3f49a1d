"""PYTORCH_ALLOC_CONF and torch.accinte.memory._set_allocator_settings: each
setting changes what the caching allocator does (Note [accinte allocator
settings]). The settings are process-wide and cannot all be undone, so each
case runs in a fresh interpreter, started with the variable set as a user
would set it; the script prints its figures as JSON.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

MiB = 1024 * 1024

PRELUDE = """
import json, torch, torch_accinte
MiB = 1024 * 1024
def empty(nbytes, stream=None):
    return torch.empty(nbytes, dtype=torch.uint8, device="accinte")
def stats():
    return torch.accinte.memory_stats()
"""


def run(script: str, conf: str | None) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
    if conf is not None:
        env["PYTORCH_ALLOC_CONF"] = conf
    out = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


MAX_SPLIT = """
big = empty(60 * MiB)          # an oversize segment of its own
del big
small = empty(2 * MiB)         # may it be carved out of the free 60 MiB block?
small.fill_(7)
after_small = stats()
close = empty(50 * MiB)        # an oversize request the free block fits within 20 MiB
s = stats()
print(json.dumps({
    "max_split_size": s["max_split_size"],
    "reserved_after_small": after_small["reserved_bytes.all.current"],
    "small_sum": int(small.sum()),
    "allocated": s["allocated_bytes.all.current"],
    "segments": s["segment.all.current"],
    "oversize_allocations": s["oversize_allocations.current"],
    "oversize_segments": s["oversize_segments.current"],
}))
"""


def test_max_split_size_keeps_oversize_blocks_whole_and_for_oversize_requests():
    limited = run(MAX_SPLIT, "max_split_size_mb:40")
    assert limited["max_split_size"] == 40 * MiB
    # The 2 MiB tensor got a 20 MiB segment of its own instead of a piece of
    # the 60 MiB block ...
    assert limited["reserved_after_small"] == 80 * MiB
    # ... and the 50 MiB tensor took the 60 MiB block whole, unsplit.
    assert limited["segments"] == 2
    assert limited["allocated"] == 2 * MiB + 60 * MiB
    assert limited["oversize_allocations"] == 1 and limited["oversize_segments"] == 1
    assert limited["small_sum"] == 7 * 2 * MiB
    default = run(MAX_SPLIT, None)
    assert default["max_split_size"] == -1  # CUDA's report for "no limit"
    assert default["reserved_after_small"] == 60 * MiB  # split from the free block
    assert default["oversize_allocations"] == 0


ROUNDUP = """
a = empty(1_100_000)   # large pool: between 1 MiB and 2 MiB
b = empty(4_600)       # small pool: between 4 KiB and 8 KiB
print(json.dumps({"allocated": stats()["allocated_bytes.all.current"]}))
"""


def test_roundup_power2_divisions_rounds_to_the_next_division():
    # 1 MiB + 1/4 MiB, and 4 KiB + 1 KiB: the next of four steps past the
    # power of two below each size.
    assert run(ROUNDUP, "roundup_power2_divisions:4")["allocated"] == 1_310_720 + 5_120
    # Per size range, in the list form: 8 steps up to 2 MiB, none above.
    assert run(ROUNDUP, "roundup_power2_divisions:[2:8,>:1]")["allocated"] == 1_179_648 + 4_608
    assert run(ROUNDUP, None)["allocated"] == 1_100_288 + 4_608  # multiples of 512 bytes


GARBAGE_COLLECTION = """
capacity = torch.accinte.get_device_properties(0).total_memory
torch.accinte.set_per_process_memory_fraction(200 * MiB / capacity)
side = torch.accinte.Stream()
with torch.accinte.stream(side):
    empty(2 * MiB)                 # a 20 MiB segment of the side stream's, left free
old, b, c = empty(40 * MiB), empty(40 * MiB), empty(40 * MiB)
old_ptr = old.data_ptr()
del old
with torch.accinte.stream(side):   # searches of the pool age the free blocks
    for _ in range(5):
        empty(2 * MiB)
del b, c
before = stats()
big = empty(50 * MiB)              # fits no free block: a new segment
s = stats()
kept = [seg["address"] for seg in torch.accinte.memory._snapshot()["segments"]]
print(json.dumps({
    "released": s["num_device_free"] - before["num_device_free"],
    "ooms": s["num_ooms"],
    "old_released": old_ptr not in kept,
    "reserved": s["reserved_bytes.all.current"],
}))
"""


def test_garbage_collection_returns_the_oldest_cached_segments_at_the_threshold():
    collected = run(GARBAGE_COLLECTION, "garbage_collection_threshold:0.5")
    # 140 MiB reserved > 100 MiB (0.5 of 200): the oldest free segment went.
    assert collected == {"released": 1, "ooms": 0, "old_released": True,
                         "reserved": 100 * MiB + 50 * MiB}
    kept = run(GARBAGE_COLLECTION, None)
    assert kept["released"] == 0 and not kept["old_released"]


def test_settings_change_at_run_time_and_bad_ones_are_refused():
    script = """
    before = stats()["max_split_size"]
    torch.accinte.memory._set_allocator_settings("max_split_size_mb:64")
    after = stats()["max_split_size"]
    torch.accinte.memory._set_allocator_settings("garbage_collection_threshold:0.5")
    replaced = stats()["max_split_size"]
    torch.accinte.memory._set_allocator_settings("max_split_size_mb:64")
    try:
        torch.accinte.memory._set_allocator_settings("max_split_size_mb:lots")
        error = None
    except Exception as e:
        error = type(e).__name__ + ": " + str(e).splitlines()[0]
    x = empty(3 * MiB).fill_(1)
    print(json.dumps({"before": before, "after": after, "replaced": replaced, "error": error,
                      "still": stats()["max_split_size"], "works": int(x.sum())}))
    """
    result = run(script, None)
    assert result["before"] == -1 and result["after"] == 64 * MiB
    assert result["replaced"] == -1  # a setting the string does not name: the default
    assert result["error"] is not None and "max_split_size_mb" in result["error"]
    # Each call replaces the settings whole: a failed one leaves the defaults.
    assert result["still"] == -1 and result["works"] == 3 * MiB


EXPANDABLE = """
torch.accinte.memory._record_memory_history(max_entries=1000)
a = empty(30 * MiB)
b = empty(30 * MiB)
contiguous = b.data_ptr() == a.data_ptr() + 30 * MiB
start = a.data_ptr()
del a, b
c = empty(70 * MiB).fill_(5)   # more than either freed block
s = stats()
snap = torch.accinte.memory._snapshot()
segments = [(seg["address"] == start, seg["total_size"], seg["is_expandable"])
            for seg in snap["segments"]]
result = {"contiguous": contiguous, "reserved": s["reserved_bytes.all.current"],
          "segments": segments, "c_at_start": c.data_ptr() == start, "sum": int(c.sum()),
          "maps": s["num_device_alloc"]}
del c
torch.accinte.empty_cache()
s = stats()
trace = torch.accinte.memory._snapshot()["device_traces"][0]
result.update(after=s["reserved_bytes.all.current"],
              unmapped=sorted(e["size"] for e in trace if e["action"] == "segment_unmap"),
              mapped=[e["size"] for e in trace if e["action"] == "segment_map"])
print(json.dumps(result))
"""


def test_expandable_segments_grow_in_place_and_shrink_on_empty_cache():
    grown = run(EXPANDABLE, "expandable_segments:True")
    # One range: 30 MiB took two 20 MiB pages, the next 30 MiB one more page
    # right after it, and the 70 MiB tensor the three pages freed plus one.
    assert grown["contiguous"] and grown["c_at_start"]
    assert grown["segments"] == [[True, 80 * MiB, True]]
    assert grown["reserved"] == 80 * MiB and grown["maps"] == 3
    assert grown["sum"] == 5 * 70 * MiB
    # The trace has each growth; empty_cache unmapped the large segment and
    # the small pool's (the 2 MiB page of the sum's result).
    assert sorted(grown["mapped"]) == [2 * MiB, 20 * MiB, 20 * MiB, 40 * MiB]
    assert grown["after"] == 0 and grown["unmapped"] == [2 * MiB, 80 * MiB]
    fixed = run(EXPANDABLE, None)
    # Ordinary segments: the 70 MiB tensor fits neither freed 30 MiB segment.
    assert fixed["reserved"] == 130 * MiB and fixed["maps"] == 3
    assert not any(expandable for _, _, expandable in fixed["segments"])


def test_this_process_runs_with_the_default_settings():
    """The suite's own process has no PYTORCH_ALLOC_CONF: the numbers of
    tests/test_caching_allocator.py assume CUDA's defaults."""
    if os.environ.get("PYTORCH_ALLOC_CONF"):
        pytest.skip("PYTORCH_ALLOC_CONF is set for this run")
    torch.empty(1, device="accinte")
    assert torch.accinte.memory_stats()["max_split_size"] == -1
