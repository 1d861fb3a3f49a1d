"""Streams: torch.accinte.Stream, current/default streams, asynchronous work."""

import threading

import torch

from held_stream import hold_stream


def test_default_and_current_stream():
    s = torch.accinte.current_stream()
    assert s == torch.accinte.default_stream()
    assert s.stream_id == 0 and s.device == torch.device("accinte:0")
    assert torch.accelerator.current_stream() == s
    assert torch.accinte.default_stream(1).device == torch.device("accinte:1")


def test_new_streams_and_priorities():
    s = torch.accinte.Stream()
    hi = torch.accinte.Stream(priority=-1)
    other = torch.accinte.Stream(device=1)
    assert s != torch.accinte.default_stream()
    assert s.device_index == 0 and other.device_index == 1
    assert hi.stream_id != s.stream_id
    assert torch.Stream("accinte").device.type == "accinte"


def test_stream_context_switches_current_stream_and_device():
    s = torch.accinte.Stream(device=1)
    with torch.accinte.stream(s):
        assert torch.accinte.current_device() == 1
        assert torch.accinte.current_stream() == s
    assert torch.accinte.current_device() == 0
    assert torch.accinte.current_stream(1) == torch.accinte.default_stream(1)
    with torch.accinte.stream(None):
        assert torch.accinte.current_stream() == torch.accinte.default_stream()


def test_set_stream():
    s = torch.accinte.Stream()
    torch.accinte.set_stream(s)
    try:
        assert torch.accinte.current_stream() == s
    finally:
        torch.accinte.set_stream(torch.accinte.default_stream())


def test_current_stream_is_per_thread():
    s = torch.accinte.Stream()
    seen = []
    with torch.accinte.stream(s):
        t = threading.Thread(target=lambda: seen.append(torch.accinte.current_stream()))
        t.start()
        t.join()
    assert seen == [torch.accinte.default_stream()]


def test_work_is_asynchronous_until_synchronized():
    s = torch.accinte.Stream()
    with torch.accinte.stream(s):
        torch.accinte._sleep(300)
    assert not s.query()  # the stream is busy with queued work
    s.synchronize()
    assert s.query()


def test_device_synchronize_waits_for_all_streams():
    a, b = torch.accinte.Stream(), torch.accinte.Stream()
    for s in (a, b):
        with torch.accinte.stream(s):
            torch.accinte._sleep(150)
    torch.accinte.synchronize()
    assert a.query() and b.query()


def test_copies_are_ordered_on_the_stream():
    # A device-to-device copy queued behind a busy stream waits its turn;
    # reading the result from the host waits for it.
    src = torch.arange(1000.0, device="accinte")
    dst = torch.empty(1000, device="accinte")
    with hold_stream() as hold:
        dst.copy_(src)
        assert hold.held() and not hold.stream.query()
    assert torch.equal(dst.cpu(), torch.arange(1000.0))


def test_wait_stream_orders_two_streams():
    a, b = torch.accinte.Stream(), torch.accinte.Stream()
    with torch.accinte.stream(a):
        torch.accinte._sleep(300)
    b.wait_stream(a)
    with torch.accinte.stream(b):
        torch.accinte._sleep(1)
    assert not b.query()  # b waits for a's sleep
    b.synchronize()
    assert a.query()
