"""Memory history and snapshots (csrc/runtime/AccInteMemorySnapshot,
torch_accinte/csrc/Memory.cpp): the format PyTorch's memory visualiser reads,
Python stack frames, the trace, and its settings."""

import pickle

import pytest
import torch
from torch.cuda import _memory_viz

KiB = 1024
MiB = 1024 * KiB


def empty(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes, dtype=torch.uint8, device="accinte")


def allocate_in_a_named_function(nbytes: int) -> torch.Tensor:
    return empty(nbytes)


@pytest.fixture(autouse=True)
def history():
    torch.accinte.synchronize()
    torch.accinte.empty_cache()
    torch.accinte.memory._record_memory_history(stacks="python", clear_history=True)
    yield
    torch.accinte.memory._record_memory_history(enabled=None, clear_history=True)


def segment_of(snapshot: dict, ptr: int) -> dict:
    for segment in snapshot["segments"]:
        if segment["address"] <= ptr < segment["address"] + segment["total_size"]:
            return segment
    raise AssertionError(f"no segment holds {ptr:#x}")


def block_at(segment: dict, ptr: int) -> dict:
    return next(b for b in segment["blocks"] if b["address"] == ptr)


def actions(snapshot: dict, device: int = 0) -> list[str]:
    return [e["action"] for e in snapshot["device_traces"][device]]


def test_segments_and_blocks_have_the_visualiser_fields():
    x = allocate_in_a_named_function(3000)
    snapshot = torch.accinte.memory._snapshot()
    assert set(snapshot) >= {"segments", "device_traces"}
    assert len(snapshot["device_traces"]) == torch.accinte.device_count()
    segment = segment_of(snapshot, x.data_ptr())
    assert set(segment) >= {
        "device", "address", "total_size", "allocated_size", "active_size", "requested_size",
        "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks",
    }
    assert (segment["device"], segment["segment_type"], segment["total_size"]) == (0, "small", 2 * MiB)
    assert (segment["allocated_size"], segment["requested_size"]) == (3072, 3000)
    assert segment["segment_pool_id"] == (0, 0) and segment["is_expandable"] is False
    assert sum(b["size"] for b in segment["blocks"]) == segment["total_size"]
    block = block_at(segment, x.data_ptr())
    assert (block["size"], block["requested_size"], block["state"]) == (3072, 3000, "active_allocated")
    assert segment["blocks"][-1]["state"] == "inactive"  # the rest of the segment


def test_blocks_carry_the_python_stack_that_allocated_them():
    x = allocate_in_a_named_function(3000)
    block = block_at(segment_of(torch.accinte.memory._snapshot(), x.data_ptr()), x.data_ptr())
    assert block["frames"], "no frames recorded"
    assert all(set(f) >= {"filename", "line", "name"} for f in block["frames"])
    # Innermost first: the helper that called torch.empty, then its caller.
    top, caller = block["frames"][:2]
    assert (top["name"], caller["name"]) == ("empty", "allocate_in_a_named_function")
    assert top["filename"] == __file__
    assert isinstance(top["line"], int) and top["line"] > 0
    assert any(f["name"] == "test_blocks_carry_the_python_stack_that_allocated_them"
               for f in block["frames"])


def test_block_awaiting_another_stream_is_pending_free():
    side = torch.accinte.Stream()
    x = empty(64 * KiB)
    ptr = x.data_ptr()
    with torch.accinte.stream(side):
        torch.accinte._sleep(300)
    x.record_stream(side)
    del x
    segment = segment_of(torch.accinte.memory._snapshot(), ptr)
    assert block_at(segment, ptr)["state"] == "active_pending_free"
    assert segment["active_size"] - segment["allocated_size"] == 64 * KiB
    side.synchronize()


def test_trace_records_every_allocator_action_in_order():
    x = allocate_in_a_named_function(30 * MiB)
    ptr = x.data_ptr()
    del x
    torch.accinte.empty_cache()
    trace = torch.accinte.memory._snapshot()["device_traces"][0]
    assert [e["action"] for e in trace] == [
        "segment_alloc", "alloc", "free_requested", "free_completed", "segment_free", "snapshot"]
    for entry in trace[:5]:
        assert entry["addr"] == ptr
        assert set(entry) >= {"action", "addr", "size", "stream", "frames", "time_us"}
    assert [e["size"] for e in trace[:5]] == [30 * MiB] * 5
    assert trace[1]["frames"][1]["name"] == "allocate_in_a_named_function"
    assert trace[0]["time_us"] <= trace[-1]["time_us"]


def test_out_of_memory_is_in_the_trace():
    torch.accinte.set_per_process_memory_fraction(0.001, 0)
    try:
        with pytest.raises(torch.OutOfMemoryError):
            empty(30 * MiB)
    finally:
        torch.accinte.set_per_process_memory_fraction(1.0, 0)
    oom = torch.accinte.memory._snapshot()["device_traces"][0][-2]
    assert oom["action"] == "oom"
    assert oom["size"] == 30 * MiB
    assert oom["device_free"] == torch.accinte.mem_get_info()[0]


def test_max_entries_keeps_the_newest():
    torch.accinte.memory._record_memory_history(stacks="python", max_entries=3)
    x = empty(4 * KiB)
    del x
    y = empty(8 * KiB)
    assert actions(torch.accinte.memory._snapshot()) == ["free_completed", "alloc", "snapshot"]
    del y


def test_state_only_records_stacks_but_no_trace():
    torch.accinte.memory._record_memory_history(enabled="state", context="state",
                                                 stacks="python", clear_history=True)
    x = allocate_in_a_named_function(3000)
    snapshot = torch.accinte.memory._snapshot()
    assert snapshot["device_traces"][0] == []
    block = block_at(segment_of(snapshot, x.data_ptr()), x.data_ptr())
    assert block["frames"][1]["name"] == "allocate_in_a_named_function"


def test_no_context_records_the_trace_without_stacks():
    torch.accinte.memory._record_memory_history(context=None, clear_history=True)
    x = empty(3000)
    snapshot = torch.accinte.memory._snapshot()
    assert actions(snapshot)[-2:] == ["alloc", "snapshot"]
    assert all(e["frames"] == [] for e in snapshot["device_traces"][0])
    assert block_at(segment_of(snapshot, x.data_ptr()), x.data_ptr())["frames"] == []


def test_disabling_stops_the_trace():
    torch.accinte.memory._record_memory_history(enabled=None)
    x = empty(3000)
    del x
    snapshot = torch.accinte.memory._snapshot()
    assert "alloc" not in actions(snapshot)


def test_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="enabled must be None, 'state' or 'all'"):
        torch.accinte.memory._record_memory_history(enabled="everything")
    with pytest.raises(RuntimeError, match="stacks must be 'python' or 'all'"):
        torch.accinte.memory._record_memory_history(stacks="cpp")
    with pytest.raises(RuntimeError, match="needs enabled='all'"):
        torch.accinte.memory._record_memory_history(enabled="state", context="alloc")


def test_pytorch_memory_visualiser_reads_the_snapshot(tmp_path):
    keep = [allocate_in_a_named_function(n) for n in (3000, 700 * KiB, 5 * MiB, 30 * MiB)]
    del keep[1]
    snapshot = torch.accinte.memory._snapshot()
    summary = _memory_viz.segsum(snapshot)
    assert "segments:" in summary and "total_reserved" in summary
    assert "allocate_in_a_named_function" in _memory_viz.segments(
        snapshot, format_flamegraph=lambda lines: lines)
    assert "allocate_in_a_named_function" in _memory_viz.memory(
        snapshot, format_flamegraph=lambda lines: lines)
    assert "Device 0" in _memory_viz.trace(snapshot)
    for html in (_memory_viz.trace_plot(snapshot), _memory_viz.segment_plot(snapshot)):
        assert html.startswith("\n<!DOCTYPE html>")
    path = tmp_path / "snapshot.pickle"
    torch.accinte.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        assert set(pickle.load(f)) >= {"segments", "device_traces"}
