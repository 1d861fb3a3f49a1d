"""Streams: asynchrony, ordering, workers, priorities, handles, launches."""

import ctypes
import threading
import time

import pytest

from accinte_ctypes import (HOST_FN, KERNEL_FN, Err, Gate, Recorder, check, malloc,
                            read_device, run_ok, stream_create)


@pytest.fixture
def stream(ac):
    s = stream_create(ac)
    yield s
    check(ac.acStreamDestroy(s))


def priority_of(ac, s):
    p = ctypes.c_int()
    check(ac.acStreamGetPriority(s, ctypes.byref(p)))
    return p.value


def device_of(ac, s):
    d = ctypes.c_int()
    check(ac.acStreamGetDevice(s, ctypes.byref(d)))
    return d.value


def test_new_stream_is_idle(ac, stream):
    assert ac.acStreamQuery(stream) == Err.Success
    check(ac.acStreamSynchronize(stream))


# LITERALINCLUDE START: TESTING RUNTIME GATE
def test_launch_returns_before_the_work_runs(ac, stream):
    gate = Gate(ac).launch(stream)
    assert ac.acStreamQuery(stream) == Err.NotReady
    assert not gate.finished.is_set()
    gate.open()
    check(ac.acStreamSynchronize(stream))
    assert gate.finished.is_set()
    assert ac.acStreamQuery(stream) == Err.Success
# LITERALINCLUDE END: TESTING RUNTIME GATE


def test_stream_is_busy_until_the_task_has_finished(ac, stream):
    # The task has left the queue and is running: still not ready.
    gate = Gate(ac).launch(stream)
    assert gate.started.wait(5)
    time.sleep(0.05)
    assert ac.acStreamQuery(stream) == Err.NotReady
    gate.open()
    assert gate.finished.wait(5)
    check(ac.acStreamSynchronize(stream))
    assert ac.acStreamQuery(stream) == Err.Success


def test_tasks_run_in_queue_order(ac, stream):
    rec = Recorder(ac)
    for i in range(50):
        rec.launch(stream, i, delay=0.002 if i % 10 == 0 else 0.0)
    check(ac.acStreamSynchronize(stream))
    assert rec.order == list(range(50))


def test_each_stream_has_its_own_worker(ac):
    # Each task waits for the other's signal, which only completes if the
    # two streams run at the same time.
    a, b = stream_create(ac), stream_create(ac)
    signals = {"a": threading.Event(), "b": threading.Event()}
    met = {}

    def meet(me, other):
        def body(_):
            signals[me].set()
            met[me] = signals[other].wait(5)
        return HOST_FN(body)

    fa, fb = meet("a", "b"), meet("b", "a")
    check(ac.acLaunchHostFunc(a, fa, None))
    check(ac.acLaunchHostFunc(b, fb, None))
    check(ac.acStreamSynchronize(a))
    check(ac.acStreamSynchronize(b))
    assert met == {"a": True, "b": True}
    check(ac.acStreamDestroy(a))
    check(ac.acStreamDestroy(b))


def test_many_threads_can_queue_on_one_stream(ac, stream):
    counter = []
    fn = HOST_FN(lambda _: counter.append(1))

    def submit():
        for _ in range(100):
            check(ac.acLaunchHostFunc(stream, fn, None))

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(ac.acStreamSynchronize(stream))
    assert len(counter) == 400


@pytest.mark.parametrize("requested, expected", [(0, 0), (-1, -1), (-5, -1), (3, 0)])
def test_priorities_are_clamped_to_the_range(ac, requested, expected):
    s = stream_create(ac, priority=requested)
    assert priority_of(ac, s) == expected
    check(ac.acStreamDestroy(s))


def test_default_priority_and_bad_flags(ac, stream):
    assert priority_of(ac, stream) == 0
    assert priority_of(ac, None) == 0
    s = ctypes.c_void_p()
    assert ac.acStreamCreateWithPriority(ctypes.byref(s), 0x8, 0) == Err.InvalidValue
    check(ac.acStreamCreateWithPriority(ctypes.byref(s), 0x1, 0))  # non-blocking
    check(ac.acStreamDestroy(s))


def test_stream_device(ac, two_devices):
    check(ac.acSetDevice(1))
    s = stream_create(ac)
    assert device_of(ac, None) == 1
    check(ac.acSetDevice(0))
    assert device_of(ac, s) == 1  # a stream keeps the device it was created on
    assert device_of(ac, None) == 0
    check(ac.acStreamDestroy(s))


def test_default_stream_is_what_null_means(ac, two_devices):
    handles = []
    for device in (0, 1):
        h = ctypes.c_void_p()
        check(ac.acDeviceGetDefaultStream(device, ctypes.byref(h)))
        assert h.value is not None
        assert device_of(ac, h.value) == device
        handles.append(h.value)
    assert handles[0] != handles[1]
    check(ac.acSetDevice(1))
    gate = Gate(ac).launch(None)
    assert ac.acStreamQuery(handles[1]) == Err.NotReady
    assert ac.acStreamQuery(handles[0]) == Err.Success
    gate.open()
    check(ac.acStreamSynchronize(handles[1]))
    h = ctypes.c_void_p()
    assert ac.acDeviceGetDefaultStream(2, ctypes.byref(h)) == Err.InvalidDevice
    assert ac.acDeviceGetDefaultStream(0, None) == Err.InvalidValue


def test_destroy_waits_for_pending_work(ac):
    s = stream_create(ac)
    gate = Gate(ac).launch(s)
    timer = threading.Timer(0.2, gate.open)
    timer.start()
    begin = time.monotonic()
    check(ac.acStreamDestroy(s))
    assert time.monotonic() - begin >= 0.15
    assert gate.finished.is_set()
    timer.join()


def test_invalid_handles(ac):
    s = stream_create(ac)
    check(ac.acStreamDestroy(s))
    fn = HOST_FN(lambda _: None)
    p = ctypes.c_int()
    for handle in (s, 0xDEAD0):  # destroyed, and never a stream
        assert ac.acStreamQuery(handle) == Err.InvalidResourceHandle
        assert ac.acStreamSynchronize(handle) == Err.InvalidResourceHandle
        assert ac.acStreamDestroy(handle) == Err.InvalidResourceHandle
        assert ac.acStreamGetPriority(handle, ctypes.byref(p)) == Err.InvalidResourceHandle
        assert ac.acStreamGetDevice(handle, ctypes.byref(p)) == Err.InvalidResourceHandle
        assert ac.acLaunchHostFunc(handle, fn, None) == Err.InvalidResourceHandle
    default = ctypes.c_void_p()
    check(ac.acDeviceGetDefaultStream(0, ctypes.byref(default)))
    assert ac.acStreamDestroy(default) == Err.InvalidResourceHandle
    assert ac.acStreamDestroy(None) == Err.InvalidResourceHandle


def test_destroyed_handle_is_refused_while_the_stream_drains(ac):
    # A thread that resolved a handle keeps it for its next call (Note
    # [accinte resolving a stream handle]). Once acStreamDestroy has taken
    # the handle out, that thread must be refused too, even while the stream
    # itself still lives, its destruction waiting for the work queued on it.
    s = stream_create(ac)
    gate = Gate(ac).launch(s)
    assert ac.acStreamQuery(s) == Err.NotReady  # this thread resolved s last
    destroyed = []
    destroyer = threading.Thread(target=lambda: destroyed.append(ac.acStreamDestroy(s)))
    destroyer.start()

    def query_from_a_new_thread():  # a thread that never resolved s
        seen = []
        t = threading.Thread(target=lambda: seen.append(ac.acStreamQuery(s)))
        t.start()
        t.join()
        return seen[0]

    try:
        deadline = time.monotonic() + 10
        while query_from_a_new_thread() != Err.InvalidResourceHandle:
            assert time.monotonic() < deadline, "acStreamDestroy never took the handle out"
            time.sleep(0.01)
        assert not gate.finished.is_set()  # the stream is still draining
        assert ac.acStreamQuery(s) == Err.InvalidResourceHandle
        p = ctypes.c_int()
        assert ac.acStreamGetPriority(s, ctypes.byref(p)) == Err.InvalidResourceHandle
    finally:
        gate.open()
        destroyer.join()
    assert destroyed == [Err.Success]


def test_null_functions_are_rejected(ac, stream):
    assert ac.acLaunchHostFunc(stream, HOST_FN(), None) == Err.InvalidValue
    assert ac.acLaunchKernel(stream, KERNEL_FN(), None) == Err.InvalidValue


def test_host_function_receives_user_data(ac, stream):
    seen = []
    fn = HOST_FN(lambda data: seen.append(data))
    check(ac.acLaunchHostFunc(stream, fn, 0x1234))
    check(ac.acStreamSynchronize(stream))
    assert seen == [0x1234]


def test_kernel_writes_device_memory(ac, stream):
    d = malloc(ac, 8)

    def kernel(_):
        ctypes.memmove(d, b"kernel!!", 8)
        return 0

    fn = KERNEL_FN(kernel)
    check(ac.acLaunchKernel(stream, fn, None))
    check(ac.acStreamSynchronize(stream))
    assert read_device(ac, d, 8) == b"kernel!!"
    check(ac.acFree(d))


def test_kernel_failure_is_reported_once_by_synchronize(ac, stream):
    ran = []
    fail = KERNEL_FN(lambda _: 7)
    ok = KERNEL_FN(lambda _: ran.append(1) or 0)
    check(ac.acLaunchKernel(stream, fail, None))  # the launch itself succeeds
    check(ac.acLaunchKernel(stream, ok, None))    # later work still runs
    assert ac.acStreamSynchronize(stream) == Err.LaunchFailure
    assert ran == [1]
    check(ac.acStreamSynchronize(stream))         # reported, then cleared
    check(ac.acLaunchKernel(stream, ok, None))    # the stream stays usable
    check(ac.acStreamSynchronize(stream))
    assert ran == [1, 1]


def test_kernel_failure_is_reported_by_device_synchronize(ac, stream):
    fail = KERNEL_FN(lambda _: 1)
    check(ac.acLaunchKernel(stream, fail, None))
    assert ac.acDeviceSynchronize() == Err.LaunchFailure
    check(ac.acDeviceSynchronize())
    check(ac.acStreamSynchronize(stream))


def test_kernel_failure_is_reported_by_stream_destroy(ac):
    s = stream_create(ac)
    fail = KERNEL_FN(lambda _: 1)
    check(ac.acLaunchKernel(s, fail, None))
    assert ac.acStreamDestroy(s) == Err.LaunchFailure
    assert ac.acStreamQuery(s) == Err.InvalidResourceHandle


def test_kernel_throwing_a_cpp_exception_is_a_launch_failure(ac, stream):
    # std::__throw_length_error(const char*) is a real C++ function that
    # throws; called as a kernel its argument is the user data. The worker
    # must catch the exception instead of terminating the process.
    libstdcxx = ctypes.CDLL("libstdc++.so.6")
    thrower = ctypes.cast(libstdcxx._ZSt20__throw_length_errorPKc, KERNEL_FN)
    message = ctypes.create_string_buffer(b"thrown by a kernel")
    check(ac.acLaunchKernel(stream, thrower, message))
    assert ac.acStreamSynchronize(stream) == Err.LaunchFailure
    check(ac.acStreamSynchronize(stream))
    # A host function that throws is treated the same way.
    check(ac.acLaunchHostFunc(stream, ctypes.cast(thrower, HOST_FN), message))
    assert ac.acStreamSynchronize(stream) == Err.LaunchFailure


def test_blocking_calls_are_refused_inside_stream_work(ac, stream):
    results = {}

    def body(_):
        results["sync"] = ac.acStreamSynchronize(stream)
        results["device"] = ac.acDeviceSynchronize()
        results["query"] = ac.acStreamQuery(stream)  # non-blocking calls are fine

    fn = HOST_FN(body)
    check(ac.acLaunchHostFunc(stream, fn, None))
    check(ac.acStreamSynchronize(stream))
    assert results == {"sync": Err.NotSupported, "device": Err.NotSupported,
                       "query": Err.NotReady}


def test_process_exits_while_a_worker_is_busy():
    # The runtime is never torn down at exit, so exit neither waits for nor
    # deadlocks with a worker that is still running (here a 60 s usleep from
    # libc, queued as a host function; the child's start-up on a loaded
    # machine takes a few seconds at most, so the bound below leaves room).
    begin = time.monotonic()
    run_ok("""
        libc = ctypes.CDLL(None)
        stream = stream_create(ac)
        check(ac.acLaunchHostFunc(stream, ctypes.cast(libc.usleep, HOST_FN), 60_000_000))
        idle = stream_create(ac)                 # a parked worker, too
        check(ac.acLaunchHostFunc(idle, ctypes.cast(libc.getpid, HOST_FN), None))
        check(ac.acStreamSynchronize(idle))
        assert ac.acStreamQuery(stream) == Err.NotReady
    """, timeout=50)
    assert time.monotonic() - begin < 40
