"""Events: record, query, synchronize, elapsed time, cross-stream waits."""

import pytest
import torch


def test_record_query_synchronize():
    e = torch.accinte.Event()
    assert e.query()  # never recorded
    torch.accinte._sleep(200)
    e.record()
    assert not e.query()
    e.synchronize()
    assert e.query()


def test_elapsed_time_measures_stream_work():
    start, end = torch.accinte.Event(enable_timing=True), torch.accinte.Event(enable_timing=True)
    start.record()
    torch.accinte._sleep(100)
    end.record()
    end.synchronize()
    assert 80 <= start.elapsed_time(end) < 2000


def test_elapsed_time_needs_timing():
    start, end = torch.accinte.Event(), torch.accinte.Event()
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises(RuntimeError, match="acError"):
        start.elapsed_time(end)


def test_generic_torch_event_works_on_accinte():
    start = torch.Event("accinte", enable_timing=True)
    end = torch.Event("accinte", enable_timing=True)
    start.record()
    torch.accinte._sleep(50)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 40


def test_stream_waits_for_event_on_another_stream():
    a, b = torch.accinte.Stream(), torch.accinte.Stream(device=1)
    e = torch.accinte.Event()
    with torch.accinte.stream(a):
        torch.accinte._sleep(300)
        e.record(a)
    b.wait_event(e)
    with torch.accinte.stream(b):
        torch.accinte._sleep(1)
    assert not b.query()
    b.synchronize()
    assert e.query()


def test_record_event_from_stream():
    s = torch.accinte.Stream()
    with torch.accinte.stream(s):
        torch.accinte._sleep(100)
    e = s.record_event()
    assert not e.query()
    e.synchronize()
    assert e.query()
