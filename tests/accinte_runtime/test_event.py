"""Events: record, query, synchronize, timing, and stream waits."""

import ctypes
import time

import pytest

from accinte_ctypes import (EVENT_DISABLE_TIMING, KERNEL_FN, Err, Gate, Recorder, check,
                            event_create, stream_create)


@pytest.fixture
def events(ac):
    created = []

    def make(flags=0):
        created.append(event_create(ac, flags))
        return created[-1]

    yield make
    for e in created:
        check(ac.acEventDestroy(e))


def elapsed(ac, start, end):
    ms = ctypes.c_float()
    code = ac.acEventElapsedTime(ctypes.byref(ms), start, end)
    return code, ms.value


def test_never_recorded_event_is_complete(ac, events):
    e = events()
    check(ac.acEventQuery(e))
    check(ac.acEventSynchronize(e))


def test_record_completes_when_prior_work_finishes(ac, streams, events):
    s, e = streams(), events()
    gate = Gate(ac).launch(s)
    check(ac.acEventRecord(e, s))
    assert ac.acEventQuery(e) == Err.NotReady
    gate.open()
    check(ac.acEventSynchronize(e))
    assert gate.finished.is_set()
    check(ac.acEventQuery(e))


def test_record_does_not_wait_for_later_work(ac, streams, events):
    s, e = streams(), events()
    check(ac.acEventRecord(e, s))
    gate = Gate(ac).launch(s)
    check(ac.acEventSynchronize(e))  # returns although the stream is held
    assert ac.acStreamQuery(s) == Err.NotReady
    gate.open()
    check(ac.acStreamSynchronize(s))


def test_queries_refer_to_the_latest_record(ac, streams, events):
    busy, idle, e = streams(), streams(), events()
    gate = Gate(ac).launch(busy)
    check(ac.acEventRecord(e, busy))
    assert ac.acEventQuery(e) == Err.NotReady
    check(ac.acEventRecord(e, idle))   # re-recorded on an idle stream
    deadline = time.monotonic() + 2
    while ac.acEventQuery(e) == Err.NotReady and time.monotonic() < deadline:
        time.sleep(0.001)
    check(ac.acEventQuery(e))          # complete although `busy` is still held
    check(ac.acEventSynchronize(e))
    assert not gate.finished.is_set()
    gate.open()
    check(ac.acStreamSynchronize(busy))


def test_record_on_the_null_stream(ac, events):
    e = events()
    gate = Gate(ac).launch(None)
    check(ac.acEventRecord(e, None))
    assert ac.acEventQuery(e) == Err.NotReady
    gate.open()
    check(ac.acEventSynchronize(e))


def test_elapsed_time_spans_the_work_between_records(ac, streams, events):
    s, start, end = streams(), events(), events()
    sleep = KERNEL_FN(lambda _: time.sleep(0.05) or 0)
    check(ac.acEventRecord(start, s))
    check(ac.acLaunchKernel(s, sleep, None))
    check(ac.acEventRecord(end, s))
    check(ac.acEventSynchronize(end))
    code, ms = elapsed(ac, start, end)
    check(code)
    assert 40.0 <= ms < 5000.0


def test_elapsed_time_errors(ac, streams, events):
    s, start, end = streams(), events(), events()
    untimed = events(EVENT_DISABLE_TIMING)
    never = events()
    check(ac.acEventRecord(start, s))
    check(ac.acEventRecord(untimed, s))
    gate = Gate(ac).launch(s)
    check(ac.acEventRecord(end, s))
    assert elapsed(ac, start, end)[0] == Err.NotReady
    gate.open()
    check(ac.acEventSynchronize(end))
    assert elapsed(ac, start, untimed)[0] == Err.InvalidResourceHandle
    assert elapsed(ac, untimed, end)[0] == Err.InvalidResourceHandle
    assert elapsed(ac, start, never)[0] == Err.InvalidResourceHandle
    assert ac.acEventElapsedTime(None, start, end) == Err.InvalidValue
    check(elapsed(ac, start, end)[0])


def test_stream_waits_for_an_event_of_another_stream(ac, streams, events):
    a, b, e = streams(), streams(), events()
    rec = Recorder(ac)
    gate = Gate(ac).launch(a)
    rec.launch(a, "a", delay=0.05)
    check(ac.acEventRecord(e, a))
    check(ac.acStreamWaitEvent(b, e, 0))
    rec.launch(b, "b")
    time.sleep(0.1)
    assert ac.acStreamQuery(b) == Err.NotReady  # b is held by a's gate
    assert rec.order == []
    gate.open()
    check(ac.acStreamSynchronize(b))
    assert rec.order == ["a", "b"]


def test_stream_wait_across_devices(ac, events, two_devices):
    a = stream_create(ac)
    e = events()
    check(ac.acSetDevice(1))
    b = stream_create(ac)
    check(ac.acSetDevice(0))
    rec = Recorder(ac)
    gate = Gate(ac).launch(a)
    rec.launch(a, "device 0")
    check(ac.acEventRecord(e, a))
    check(ac.acStreamWaitEvent(b, e, 0))
    rec.launch(b, "device 1")
    assert ac.acStreamQuery(b) == Err.NotReady
    gate.open()
    check(ac.acStreamSynchronize(b))
    assert rec.order == ["device 0", "device 1"]
    for s in (a, b):
        check(ac.acStreamDestroy(s))


def test_wait_uses_the_record_that_was_latest_at_the_call(ac, streams, events):
    a, b, idle, e = streams(), streams(), streams(), events()
    gate = Gate(ac).launch(a)
    check(ac.acEventRecord(e, a))
    check(ac.acStreamWaitEvent(b, e, 0))
    check(ac.acEventRecord(e, idle))  # later record: completes at once
    check(ac.acEventSynchronize(e))
    time.sleep(0.05)
    assert ac.acStreamQuery(b) == Err.NotReady  # still waiting for a
    gate.open()
    check(ac.acStreamSynchronize(b))


def test_waiting_on_a_never_recorded_event_is_a_no_op(ac, streams, events):
    s, e = streams(), events()
    check(ac.acStreamWaitEvent(s, e, 0))
    rec = Recorder(ac)
    rec.launch(s, "ran")
    check(ac.acStreamSynchronize(s))
    assert rec.order == ["ran"]
    assert ac.acStreamWaitEvent(s, e, 1) == Err.InvalidValue  # no flags exist


def test_event_synchronize_reports_a_kernel_failure_once(ac, streams, events):
    s, e = streams(), events()
    fail = KERNEL_FN(lambda _: 1)
    check(ac.acLaunchKernel(s, fail, None))
    check(ac.acEventRecord(e, s))
    assert ac.acEventSynchronize(e) == Err.LaunchFailure
    check(ac.acEventSynchronize(e))
    check(ac.acStreamSynchronize(s))  # cleared for the stream too


def test_event_synchronize_ignores_failures_after_the_record(ac, streams, events):
    s, before, after = streams(), events(), events()
    fail = KERNEL_FN(lambda _: 1)
    check(ac.acEventRecord(before, s))
    check(ac.acLaunchKernel(s, fail, None))
    check(ac.acEventRecord(after, s))
    while ac.acEventQuery(after) == Err.NotReady:  # a query reports no errors
        time.sleep(0.001)
    check(ac.acEventSynchronize(before))  # the failure came after this record
    assert ac.acEventSynchronize(after) == Err.LaunchFailure
    check(ac.acStreamSynchronize(s))


def test_event_and_stream_must_share_a_device(ac, events, two_devices):
    e = events()  # device 0
    check(ac.acSetDevice(1))
    s = stream_create(ac)
    assert ac.acEventRecord(e, s) == Err.InvalidResourceHandle
    assert ac.acEventRecord(e, None) == Err.InvalidResourceHandle  # device 1's default
    check(ac.acStreamDestroy(s))


def test_invalid_event_handles(ac, streams):
    s = streams()
    e = event_create(ac)
    check(ac.acEventDestroy(e))
    ms = ctypes.c_float()
    for handle in (e, 0xDEAD0, None):
        assert ac.acEventQuery(handle) == Err.InvalidResourceHandle
        assert ac.acEventSynchronize(handle) == Err.InvalidResourceHandle
        assert ac.acEventRecord(handle, s) == Err.InvalidResourceHandle
        assert ac.acEventDestroy(handle) == Err.InvalidResourceHandle
        assert ac.acStreamWaitEvent(s, handle, 0) == Err.InvalidResourceHandle
        assert ac.acEventElapsedTime(ctypes.byref(ms), handle, handle) == \
            Err.InvalidResourceHandle
    out = ctypes.c_void_p()
    assert ac.acEventCreateWithFlags(ctypes.byref(out), 0x10) == Err.InvalidValue


def test_destroying_an_event_with_a_pending_record(ac, streams):
    # Destroy returns at once; the stream still waits for the record.
    a, b = streams(), streams()
    e = event_create(ac)
    gate = Gate(ac).launch(a)
    check(ac.acEventRecord(e, a))
    check(ac.acStreamWaitEvent(b, e, 0))
    check(ac.acEventDestroy(e))
    assert ac.acStreamQuery(b) == Err.NotReady
    gate.open()
    check(ac.acStreamSynchronize(b))
