"""Stream capture and graphs: recording instead of running, replays, and the
calls a capture refuses (and invalidates itself over)."""

import ctypes
import threading
import time

import pytest

from accinte_ctypes import (GRAPH_USER_OBJECT_MOVE, HOST_FN, USER_OBJECT_NO_DESTRUCTOR_SYNC,
                            CaptureMode, CaptureStatus, Err, Kind, Recorder, check, event_create,
                            malloc, read_device, stream_create, write_device)


@pytest.fixture
def stream(ac):
    s = stream_create(ac)
    yield s
    check(ac.acStreamDestroy(s))


def status_of(ac, s):
    status = ctypes.c_int()
    check(ac.acStreamIsCapturing(s, ctypes.byref(status)))
    return CaptureStatus(status.value)


def end_capture(ac, s):
    graph = ctypes.c_void_p()
    code = ac.acStreamEndCapture(s, ctypes.byref(graph))
    return code, graph.value


def instantiate(ac, graph):
    exec_ = ctypes.c_void_p()
    check(ac.acGraphInstantiate(ctypes.byref(exec_), graph, 0))
    return exec_.value


def node_count(ac, graph):
    n = ctypes.c_size_t()
    check(ac.acGraphGetNodes(graph, None, ctypes.byref(n)))
    return n.value


def test_work_queued_during_capture_is_recorded_not_run(ac, stream):
    rec = Recorder(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    assert status_of(ac, stream) == CaptureStatus.Active
    rec.launch(stream, "a")
    rec.launch(stream, "b")
    time.sleep(0.05)
    assert rec.order == []
    code, graph = end_capture(ac, stream)
    check(code)
    assert status_of(ac, stream) == CaptureStatus.NoCapture
    assert node_count(ac, graph) == 2
    exec_ = instantiate(ac, graph)
    check(ac.acGraphDestroy(graph))  # the executable does not need the graph
    for _ in range(3):
        check(ac.acGraphLaunch(exec_, stream))
    check(ac.acStreamSynchronize(stream))
    assert rec.order == ["a", "b"] * 3
    check(ac.acGraphExecDestroy(exec_))


def test_replay_reruns_on_the_same_memory_on_any_stream(ac, stream):
    src, dst = malloc(ac, 16), malloc(ac, 16)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    check(ac.acMemcpyAsync(dst, src, 16, Kind.DeviceToDevice, stream))
    code, graph = end_capture(ac, stream)
    check(code)
    exec_ = instantiate(ac, graph)
    other = stream_create(ac)
    for i, s in enumerate([stream, other, None]):
        write_device(ac, src, bytes([i + 1]) * 16)
        check(ac.acGraphLaunch(exec_, s))
        check(ac.acStreamSynchronize(s))
        assert read_device(ac, dst, 16) == bytes([i + 1]) * 16
    check(ac.acGraphExecDestroy(exec_))
    check(ac.acGraphDestroy(graph))
    check(ac.acStreamDestroy(other))
    check(ac.acFree(src))
    check(ac.acFree(dst))


def test_capture_info_names_the_capture_and_its_graph(ac, stream):
    status, ident, graph = ctypes.c_int(), ctypes.c_ulonglong(), ctypes.c_void_p()
    check(ac.acStreamGetCaptureInfo(stream, ctypes.byref(status), ctypes.byref(ident),
                                    ctypes.byref(graph)))
    assert (status.value, ident.value, graph.value) == (CaptureStatus.NoCapture, 0, None)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    check(ac.acStreamGetCaptureInfo(stream, ctypes.byref(status), ctypes.byref(ident),
                                    ctypes.byref(graph)))
    first = ident.value
    assert status.value == CaptureStatus.Active and first != 0
    code, ended = end_capture(ac, stream)
    check(code)
    assert ended == graph.value  # the graph under construction is the result
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    check(ac.acStreamGetCaptureInfo(stream, ctypes.byref(status), ctypes.byref(ident), None))
    assert ident.value != first
    code, second = end_capture(ac, stream)
    check(code)
    check(ac.acGraphDestroy(ended))
    check(ac.acGraphDestroy(second))


def test_capture_errors(ac, stream):
    assert ac.acStreamBeginCapture(None, CaptureMode.Global) == Err.StreamCaptureUnsupported
    assert ac.acStreamBeginCapture(stream, 7) == Err.InvalidValue
    assert end_capture(ac, stream)[0] == Err.StreamCaptureUnmatched
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    assert ac.acStreamBeginCapture(stream, CaptureMode.Global) == Err.IllegalState
    code, graph = end_capture(ac, stream)
    check(code)  # the refused second begin did not invalidate the first
    check(ac.acGraphDestroy(graph))


def assert_invalidated_then_usable(ac, s):
    """The capture refuses further work and produces no graph; afterwards the
    stream runs work again."""
    assert status_of(ac, s) == CaptureStatus.Invalidated
    rec = Recorder(ac)
    with pytest.raises(AssertionError, match="acErrorStreamCaptureInvalidated"):
        rec.launch(s, "refused")
    assert end_capture(ac, s) == (Err.StreamCaptureInvalidated, None)
    assert status_of(ac, s) == CaptureStatus.NoCapture
    rec.launch(s, "after")
    check(ac.acStreamSynchronize(s))
    check(ac.acDeviceSynchronize())
    assert rec.order == ["after"]


@pytest.mark.parametrize("call", ["acStreamSynchronize", "acStreamQuery", "acStreamDestroy"])
def test_waiting_for_the_capturing_stream_invalidates_the_capture(ac, stream, call):
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    assert getattr(ac, call)(stream) == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)


def test_device_synchronize_invalidates_the_capture(ac, stream):
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    assert ac.acDeviceSynchronize() == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)


def test_synchronous_copy_refused_in_global_mode_allowed_in_relaxed(ac, stream):
    buf = malloc(ac, 8)
    host = ctypes.create_string_buffer(8)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    check(ac.acMemcpy(host, buf, 8, Kind.DeviceToHost))
    code, graph = end_capture(ac, stream)
    check(code)
    check(ac.acGraphDestroy(graph))
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    assert ac.acMemcpy(host, buf, 8, Kind.DeviceToHost) == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)
    check(ac.acFree(buf))


def test_thread_local_mode_refuses_only_the_capturing_thread(ac, stream):
    buf = malloc(ac, 8)
    host = ctypes.create_string_buffer(8)
    check(ac.acStreamBeginCapture(stream, CaptureMode.ThreadLocal))
    results = []
    worker = threading.Thread(
        target=lambda: results.append(ac.acMemcpy(host, buf, 8, Kind.DeviceToHost)))
    worker.start()
    worker.join()
    assert results == [Err.Success]
    assert status_of(ac, stream) == CaptureStatus.Active
    assert ac.acMemset(buf, 0, 8) == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)
    check(ac.acFree(buf))


def test_capture_must_end_on_its_thread_unless_relaxed(ac, stream):
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    results = []
    worker = threading.Thread(target=lambda: results.append(end_capture(ac, stream)[0]))
    worker.start()
    worker.join()
    assert results == [Err.StreamCaptureWrongThread]
    code, graph = end_capture(ac, stream)
    check(code)
    check(ac.acGraphDestroy(graph))


def test_events_recorded_in_a_capture(ac, stream):
    event = event_create(ac)
    other = stream_create(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    check(ac.acEventRecord(event, stream))
    # Waiting for a point in the same capture is ordered already.
    check(ac.acStreamWaitEvent(stream, event, 0))
    # A default stream cannot join the capture by waiting for it.
    assert ac.acStreamWaitEvent(None, event, 0) == Err.StreamCaptureIsolation
    assert_invalidated_then_usable(ac, stream)

    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    check(ac.acEventRecord(event, stream))
    assert ac.acEventQuery(event) == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)

    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    check(ac.acEventRecord(event, stream))
    assert ac.acEventSynchronize(event) == Err.StreamCaptureUnsupported
    assert_invalidated_then_usable(ac, stream)
    check(ac.acEventSynchronize(event))  # the capture is over: nothing to wait for
    check(ac.acEventDestroy(event))
    check(ac.acStreamDestroy(other))


def test_graph_launch_into_a_capture_is_refused(ac, stream):
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    code, graph = end_capture(ac, stream)
    check(code)
    exec_ = instantiate(ac, graph)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    assert ac.acGraphLaunch(exec_, stream) == Err.StreamCaptureUnsupported
    code, empty = end_capture(ac, stream)
    check(code)
    for g in (graph, empty):
        check(ac.acGraphDestroy(g))
    check(ac.acGraphExecDestroy(exec_))
    assert ac.acGraphExecDestroy(exec_) == Err.InvalidResourceHandle
    assert ac.acGraphDestroy(graph) == Err.InvalidResourceHandle


def test_user_object_lives_until_graph_exec_and_pending_launches_are_gone(ac, stream):
    destroyed = threading.Event()
    destroy = HOST_FN(lambda _: destroyed.set())
    obj = ctypes.c_void_p()
    check(ac.acUserObjectCreate(ctypes.byref(obj), None, destroy, 1,
                                USER_OBJECT_NO_DESTRUCTOR_SYNC))
    gate = threading.Event()
    hold = HOST_FN(lambda _: gate.wait(10))
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    check(ac.acLaunchHostFunc(stream, hold, None))
    status, graph = ctypes.c_int(), ctypes.c_void_p()
    check(ac.acStreamGetCaptureInfo(stream, ctypes.byref(status), None, ctypes.byref(graph)))
    check(ac.acGraphRetainUserObject(graph, obj, 1, GRAPH_USER_OBJECT_MOVE))
    code, graph = end_capture(ac, stream)
    check(code)
    exec_ = instantiate(ac, graph)
    check(ac.acGraphDestroy(graph))
    check(ac.acGraphLaunch(exec_, stream))
    check(ac.acGraphExecDestroy(exec_))
    assert not destroyed.is_set()  # the pending launch still holds it
    gate.set()
    check(ac.acStreamSynchronize(stream))
    assert destroyed.wait(5)


def capture_info_graph(ac, s):
    status, graph = ctypes.c_int(), ctypes.c_void_p()
    check(ac.acStreamGetCaptureInfo(s, ctypes.byref(status), None, ctypes.byref(graph)))
    return graph.value


def test_graph_under_capture_cannot_be_instantiated_or_destroyed(ac, stream):
    rec = Recorder(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    rec.launch(stream, "a")
    graph = capture_info_graph(ac, stream)
    exec_ = ctypes.c_void_p()
    # Still growing: an executable made now would race with the capture.
    assert ac.acGraphInstantiate(ctypes.byref(exec_), graph, 0) == Err.StreamCaptureUnsupported
    # The capture still returns this graph: destroying it would leave a
    # dangling handle to acStreamEndCapture.
    assert ac.acGraphDestroy(graph) == Err.IllegalState
    assert node_count(ac, graph) == 1  # counting is fine, under the body's lock
    rec.launch(stream, "b")
    code, ended = end_capture(ac, stream)
    check(code)  # neither refusal invalidated the capture
    assert ended == graph and node_count(ac, ended) == 2
    exec_ = instantiate(ac, ended)
    check(ac.acGraphDestroy(ended))
    check(ac.acGraphLaunch(exec_, stream))
    check(ac.acStreamSynchronize(stream))
    assert rec.order == ["a", "b"]
    check(ac.acGraphExecDestroy(exec_))


def test_captures_underway_counts_begun_and_ended_captures(ac, stream):
    before = ac.acCapturesUnderway()
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    assert ac.acCapturesUnderway() == before + 1
    # A refused begin leaves the count alone.
    assert ac.acStreamBeginCapture(stream, CaptureMode.Relaxed) == Err.IllegalState
    assert ac.acCapturesUnderway() == before + 1
    code, graph = end_capture(ac, stream)
    check(code)
    assert ac.acCapturesUnderway() == before
    check(ac.acGraphDestroy(graph))
    # An invalidated capture is counted until it ends too.
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    assert ac.acStreamSynchronize(stream) == Err.StreamCaptureUnsupported
    assert ac.acCapturesUnderway() == before + 1
    assert end_capture(ac, stream) == (Err.StreamCaptureInvalidated, None)
    assert ac.acCapturesUnderway() == before


def test_racing_begins_leave_exactly_one_capture(ac, stream):
    before = ac.acCapturesUnderway()
    for _ in range(50):
        barrier = threading.Barrier(2)
        codes = []

        def begin():
            barrier.wait()
            codes.append(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))

        threads = [threading.Thread(target=begin) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes) == [Err.Success, Err.IllegalState]
        assert ac.acCapturesUnderway() == before + 1
        code, graph = end_capture(ac, stream)
        check(code)
        check(ac.acGraphDestroy(graph))
        assert ac.acCapturesUnderway() == before
    # No loser's capture lingers to poison the device in Global mode: a
    # device-wide synchronization is allowed again.
    check(ac.acDeviceSynchronize())


# ---- several streams in one capture (fork and join) ---------------------------------


def record_on(ac, s):
    event = event_create(ac)
    check(ac.acEventRecord(event, s))
    return event


def test_a_stream_joins_a_capture_by_waiting_for_it_and_replays_in_order(ac, stream):
    side = stream_create(ac)
    rec = Recorder(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    rec.launch(stream, "a")
    fork = record_on(ac, stream)
    check(ac.acStreamWaitEvent(side, fork, 0))  # side joins the capture
    assert status_of(ac, side) == CaptureStatus.Active
    ids = []
    for s in (stream, side):
        status, ident = ctypes.c_int(), ctypes.c_ulonglong()
        check(ac.acStreamGetCaptureInfo(s, ctypes.byref(status), ctypes.byref(ident), None))
        ids.append(ident.value)
    assert ids[0] == ids[1]  # one capture, one graph
    rec.launch(side, "b")
    rec.launch(stream, "c")
    # Only the stream the capture began on can end it.
    assert end_capture(ac, side)[0] == Err.StreamCaptureUnmatched
    join = record_on(ac, side)
    check(ac.acStreamWaitEvent(stream, join, 0))  # joined back
    rec.launch(stream, "d")
    time.sleep(0.05)
    assert rec.order == []  # nothing ran: every stream recorded
    code, graph = end_capture(ac, stream)
    check(code)
    assert status_of(ac, side) == CaptureStatus.NoCapture  # released with the capture
    exec_ = instantiate(ac, graph)
    check(ac.acGraphDestroy(graph))
    for _ in range(2):
        check(ac.acGraphLaunch(exec_, stream))
    check(ac.acStreamSynchronize(stream))
    assert rec.order == ["a", "b", "c", "d"] * 2
    # The side stream runs its own work again.
    rec.launch(side, "live")
    check(ac.acStreamSynchronize(side))
    assert rec.order[-1] == "live"
    check(ac.acGraphExecDestroy(exec_))
    for event in (fork, join):
        check(ac.acEventDestroy(event))
    check(ac.acStreamDestroy(side))


def test_a_fork_not_joined_back_fails_the_capture(ac, stream):
    side = stream_create(ac)
    rec = Recorder(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    rec.launch(stream, "a")
    fork = record_on(ac, stream)
    check(ac.acStreamWaitEvent(side, fork, 0))
    rec.launch(side, "b")  # nobody waits for this
    assert end_capture(ac, stream) == (Err.StreamCaptureUnjoined, None)
    for s in (stream, side):  # both run work again
        assert status_of(ac, s) == CaptureStatus.NoCapture
        rec.launch(s, "live")
        check(ac.acStreamSynchronize(s))
    assert rec.order == ["live", "live"]
    # A fork that did nothing needs no join.
    check(ac.acStreamBeginCapture(stream, CaptureMode.Global))
    fork2 = record_on(ac, stream)
    check(ac.acStreamWaitEvent(side, fork2, 0))
    code, graph = end_capture(ac, stream)
    check(code)
    check(ac.acGraphDestroy(graph))
    for event in (fork, fork2):
        check(ac.acEventDestroy(event))
    check(ac.acStreamDestroy(side))


def test_a_stream_capturing_another_graph_cannot_join(ac, stream):
    other = stream_create(ac)
    check(ac.acStreamBeginCapture(stream, CaptureMode.Relaxed))
    check(ac.acStreamBeginCapture(other, CaptureMode.Relaxed))
    event = record_on(ac, stream)
    assert ac.acStreamWaitEvent(other, event, 0) == Err.StreamCaptureIsolation
    assert end_capture(ac, stream) == (Err.StreamCaptureInvalidated, None)
    assert end_capture(ac, other) == (Err.StreamCaptureInvalidated, None)
    check(ac.acEventDestroy(event))
    check(ac.acStreamDestroy(other))
