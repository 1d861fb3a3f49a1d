"""The caching allocators while a graph captures: frees with record_stream,
pinned non-blocking copies, out of memory and empty_cache must not make the
runtime calls a capture forbids (event queries, acFree), and memory the graph
uses must not be handed out while its replays may still use it."""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch

DEV = "accinte"


def assert_device_works():
    a = torch.arange(6.0, device=DEV)
    assert torch.equal((a * 2 + 1).cpu(), torch.arange(6.0) * 2 + 1)
    g = torch.accinte.Graph()
    with torch.accinte.graph(g):
        b = a + 1
    g.replay()
    assert torch.equal(b.cpu(), torch.arange(6.0) + 1)


@contextlib.contextmanager
def manual_capture(g):
    """Captures on a side stream without torch.accinte.graph, whose entry
    empties the cache (the cached segments are what these tests need)."""
    with torch.accinte.stream(torch.accinte.Stream()):
        g.capture_begin()
        yield
        g.capture_end()


def block_state(ptr: int) -> str:
    """The caching allocator's state of the block holding device address
    `ptr`: active_allocated, active_pending_free (freed, waiting for events
    on the streams it was recorded on) or inactive (reusable)."""
    for segment in torch.accinte.memory._snapshot()["segments"]:
        for block in segment["blocks"]:
            if block["address"] <= ptr < block["address"] + block["size"]:
                return block["state"]
    raise AssertionError(f"no block holds {ptr:#x}")


def test_block_freed_with_record_stream_during_capture_is_deferred():
    x = torch.ones(1024, device=DEV)
    ptr = x.data_ptr()
    s = torch.accinte.Stream()
    g = torch.accinte.Graph()
    with torch.accinte.graph(g):
        y = x * 2
        x.record_stream(s)
        del x
        # This allocation used to query an event recorded on the capturing
        # stream, which invalidated the capture.
        z = torch.empty(10, device=DEV)
        z.fill_(3)
    assert not torch.accinte.is_current_stream_capturing()
    g.replay()
    assert torch.equal(y.cpu(), torch.full((1024,), 2.0))
    assert torch.equal(z.cpu(), torch.full((10,), 3.0))
    torch.accinte.synchronize()
    # The graph holds x, which its kernel reads, until it is reset (Note
    # [accinte graph argument lifetime]).
    assert block_state(ptr) == "active_allocated"
    # Then the deferred free records an event on s, the stream x was recorded
    # on; the block stays pending until an allocation sees that event done.
    # (Which free block an allocation takes depends on what else the cache
    # holds, so the block's state is checked, not the next tensor's address.)
    g.reset()
    assert block_state(ptr) == "active_pending_free"
    s.synchronize()
    w = torch.empty(1024, device=DEV)
    # Freed at last: reused by w (which may start at a free neighbour it was
    # merged with, and then holds ptr), or back in the cache.
    w_holds_ptr = w.data_ptr() <= ptr < w.data_ptr() + w.nbytes
    assert w_holds_ptr or block_state(ptr) == "inactive", block_state(ptr)
    assert_device_works()


PINNED_FREED_DURING_CAPTURE = """
import torch
x = torch.arange(256.0, device="accinte")
h = torch.empty(256).pin_memory()
h_ptr = h.data_ptr()
g = torch.accinte.Graph()
with torch.accinte.graph(g):
    y = x * 2
    h.copy_(y, non_blocking=True)
    del h
    # The host allocator processes events on allocation: none may be
    # recorded on the capturing stream.
    h2 = torch.empty(256).pin_memory()
g.replay()
torch.accinte.synchronize()
# The graph still copies into the freed block at every replay, so the block
# is never handed out again.
again = [torch.empty(256).pin_memory() for _ in range(4)]
assert h_ptr not in {t.data_ptr() for t in again + [h2]}
torch.accelerator.empty_host_cache()
# The live tensors, and the block kept for the graph.
assert torch.accinte.host_memory_stats()["allocations.current"] == len(again) + 2
print("ok")
"""


def test_pinned_block_freed_during_capture_is_never_reused(run_python):
    # In a fresh interpreter: the block stays allocated for the life of the
    # process, which would skew other tests' host memory statistics.
    result = run_python(PINNED_FREED_DURING_CAPTURE)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_out_of_memory_during_capture_keeps_the_capture():
    x = torch.ones(16, device=DEV)
    cached = torch.empty(8 << 20, dtype=torch.uint8, device=DEV)
    del cached  # a cached segment the out-of-memory retry would acFree
    torch.accinte.synchronize()
    reserved = torch.accinte.memory_reserved()
    g = torch.accinte.Graph()
    with manual_capture(g):
        y = x + 1
        with pytest.raises(torch.OutOfMemoryError, match="graph capture is underway"):
            torch.empty(64 << 30, dtype=torch.uint8, device=DEV)
    # Nothing was freed, so the capture was not invalidated: it replays.
    assert torch.accinte.memory_reserved() >= reserved
    g.replay()
    assert torch.equal(y.cpu(), torch.full((16,), 2.0))
    # Outside capture the retry releases the cache as before.
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(64 << 30, dtype=torch.uint8, device=DEV)
    assert_device_works()


def test_empty_cache_during_capture_warns_and_keeps_the_capture():
    x = torch.ones(16, device=DEV)
    cached = torch.empty(8 << 20, dtype=torch.uint8, device=DEV)
    del cached
    torch.accinte.synchronize()
    reserved = torch.accinte.memory_reserved()
    g = torch.accinte.Graph()
    with manual_capture(g):
        y = x + 1
        torch.accinte.empty_cache()  # would acFree, which the capture forbids
    assert torch.accinte.memory_reserved() >= reserved
    g.replay()
    assert torch.equal(y.cpu(), torch.full((16,), 2.0))
    torch.accinte.empty_cache()  # outside capture it frees
    assert torch.accinte.memory_reserved() < reserved + (8 << 20)
    assert_device_works()


def test_event_query_during_capture_names_the_call():
    x = torch.ones(4, device=DEV)
    with pytest.raises(RuntimeError, match="acEventQuery") as e:
        with torch.accinte.graph(torch.accinte.Graph()):
            x.add_(1)
            event = torch.accinte.Event()
            event.record()
            event.query()
    assert "acEventQuery" in str(e.value.__context__)
    assert_device_works()


def test_reset_from_another_thread_leaves_the_capture_to_its_thread():
    x = torch.zeros(4, device=DEV)
    s = torch.accinte.Stream()
    g = torch.accinte.Graph()
    errors = []
    with torch.accinte.stream(s):
        g.capture_begin()
        x.add_(1)

        def reset():
            try:
                g.reset()
            except RuntimeError as error:
                errors.append(str(error))

        t = threading.Thread(target=reset)
        t.start()
        t.join()
        assert len(errors) == 1 and "only the thread that began the capture" in errors[0]
        assert torch.accinte.is_current_stream_capturing()
        x.add_(1)
        g.capture_end()  # the capture went on, intact
    g.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 2.0))
    assert_device_works()
