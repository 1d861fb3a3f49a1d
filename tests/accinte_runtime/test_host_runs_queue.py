"""A host thread that waits for a stream runs the work nobody has started
(Note [accinte a waiting host runs the queue]), and an idle stream's worker
takes new work only after the launch latency (Note [accinte launch latency]).

Which thread runs a task is a race between the worker and the waiting host;
the tests that need the host to win run in a fresh process whose launch
latency (10 ms) leaves the host all the time it needs.
"""

import ctypes
import threading

from accinte_ctypes import (HOST_FN, KERNEL_FN, Err, Kind, check, malloc, run_ok,
                            stream_create)

LONG_LATENCY = {"ACCINTE_LAUNCH_LATENCY_US": "10000"}


def test_each_kind_of_wait_runs_the_queued_work_on_the_waiting_thread():
    out = run_ok("""
        import threading, time
        main = threading.get_ident()
        ran_on = []
        inner = []

        @HOST_FN
        def note_thread(_):
            ran_on.append(threading.get_ident())
            # Inside, the thread counts as the stream's: waits are refused.
            inner.append(ac.acStreamSynchronize(stream))

        stream = ctypes.c_void_p()
        check(ac.acStreamCreate(ctypes.byref(stream)))
        dev = ctypes.c_void_p()
        check(ac.acMalloc(ctypes.byref(dev), 8))
        host = ctypes.create_string_buffer(8)
        event = ctypes.c_void_p()
        check(ac.acEventCreate(ctypes.byref(event)))

        check(ac.acLaunchHostFunc(stream, note_thread, None))
        check(ac.acStreamSynchronize(stream))
        check(ac.acLaunchHostFunc(stream, note_thread, None))
        check(ac.acMemcpyAsync(host, dev, 8, Kind.DeviceToHost, stream))  # pageable: waits
        check(ac.acLaunchHostFunc(stream, note_thread, None))
        check(ac.acEventRecord(event, stream))
        check(ac.acEventSynchronize(event))
        check(ac.acLaunchHostFunc(stream, note_thread, None))
        check(ac.acDeviceSynchronize())
        assert ran_on == [main] * 4, (ran_on, main)
        assert inner == [Err.NotSupported] * 4, inner
        print("ok")
    """, env=LONG_LATENCY)
    assert out.strip() == "ok"


def test_an_idle_worker_takes_new_work_after_the_launch_latency():
    out = run_ok("""
        import threading, time
        ran_on = []

        @HOST_FN
        def note_thread(_):
            ran_on.append(threading.get_ident())

        stream = ctypes.c_void_p()
        check(ac.acStreamCreate(ctypes.byref(stream)))
        check(ac.acLaunchHostFunc(stream, note_thread, None))
        check(ac.acStreamSynchronize(stream))  # the worker is up, and idle
        started = time.monotonic()
        check(ac.acLaunchHostFunc(stream, note_thread, None))
        while ac.acStreamQuery(stream) == Err.NotReady:  # a query runs nothing
            time.sleep(1e-4)
        waited = time.monotonic() - started
        assert ran_on[1] != threading.get_ident(), "the worker ran it"
        assert waited >= 0.009, waited
        print("ok")
    """, env={**LONG_LATENCY, "ACCINTE_SPIN_US": "10000"})  # the worker spins, not sleeps
    assert out.strip() == "ok"


def test_work_a_task_queues_while_the_host_runs_it_is_left_to_the_worker():
    out = run_ok("""
        import threading, time
        main = threading.get_ident()
        ran_on = {}

        @HOST_FN
        def second(_):
            ran_on["second"] = threading.get_ident()

        @HOST_FN
        def first(_):
            ran_on["first"] = threading.get_ident()
            check(ac.acLaunchHostFunc(stream, second, None))  # queued behind

        stream = ctypes.c_void_p()
        check(ac.acStreamCreate(ctypes.byref(stream)))
        check(ac.acLaunchHostFunc(stream, first, None))
        check(ac.acStreamSynchronize(stream))  # waits for `first` only
        while ac.acStreamQuery(stream) == Err.NotReady:
            time.sleep(1e-4)
        assert ran_on["first"] == main and ran_on["second"] != main, (ran_on, main)
        print("ok")
    """, env=LONG_LATENCY)
    assert out.strip() == "ok"


def test_a_kernel_error_from_work_the_host_ran_is_reported_once():
    out = run_ok("""
        import threading
        ran_on = []

        @KERNEL_FN
        def failing(_):
            ran_on.append(threading.get_ident())
            return Err.InvalidValue

        stream = ctypes.c_void_p()
        check(ac.acStreamCreate(ctypes.byref(stream)))
        check(ac.acLaunchKernel(stream, failing, None))
        assert ac.acStreamSynchronize(stream) == Err.LaunchFailure
        assert ran_on == [threading.get_ident()], ran_on
        check(ac.acStreamSynchronize(stream))
        print("ok")
    """, env=LONG_LATENCY)
    assert out.strip() == "ok"


def test_a_running_task_is_not_taken_over_and_order_holds(ac):
    # The worker runs the gate; a wait started meanwhile may run what follows
    # it, never alongside it.
    stream = stream_create(ac)
    order = []
    release = threading.Event()
    started = threading.Event()

    @HOST_FN
    def gate(_):
        started.set()
        release.wait(10)
        order.append("gate")

    @HOST_FN
    def after(_):
        order.append("after")

    check(ac.acLaunchHostFunc(stream, gate, None))
    assert started.wait(10)
    check(ac.acLaunchHostFunc(stream, after, None))
    threading.Timer(0.05, release.set).start()
    check(ac.acStreamSynchronize(stream))
    assert order == ["gate", "after"]
    check(ac.acStreamDestroy(stream))


def test_with_the_default_latency_a_prompt_wait_runs_the_work(ac):
    # What .item() relies on: a copy into pageable memory right after the
    # launch finds the work untaken (nearly always; retried).
    stream = stream_create(ac)
    main = threading.get_ident()
    ran_on = []

    @KERNEL_FN
    def note_thread(_):
        ran_on.append(threading.get_ident())
        return Err.Success

    dev = malloc(ac, 8)
    host = ctypes.create_string_buffer(8)
    for _ in range(200):
        check(ac.acLaunchKernel(stream, note_thread, None))
        check(ac.acMemcpyAsync(host, dev, 8, Kind.DeviceToHost, stream))
        if ran_on[-1] == main:
            break
    assert ran_on[-1] == main, "no prompt wait ran the kernel"
    check(ac.acFree(dev))
    check(ac.acStreamDestroy(stream))


def test_a_wait_whose_work_another_thread_took_meanwhile_runs_nothing():
    # A waiting host reads "untaken work" without the lock, then takes the
    # lock; in between, another thread may run what it waits for while more
    # is queued behind it. It must then take nothing and return: taking an
    # empty batch read past its end (a segfault on a stream's first host
    # batch). Feeders launch on the stream the main thread synchronizes,
    # with fresh streams (no batch buffer yet) round after round.
    out = run_ok("""
        import threading, time
        libc = ctypes.CDLL(None)
        kernel = KERNEL_FN(ctypes.cast(libc.abs, ctypes.c_void_p).value)  # abs(NULL) == 0
        current = [stream_create(ac)]
        stop = threading.Event()

        def feed():
            while not stop.is_set():
                ac.acLaunchKernel(current[0], kernel, None)

        feeders = [threading.Thread(target=feed) for _ in range(2)]
        for f in feeders:
            f.start()
        rounds = 0
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            fresh = stream_create(ac)
            old, current[0] = current[0], fresh
            for _ in range(20):
                check(ac.acLaunchKernel(fresh, kernel, None))
                check(ac.acStreamSynchronize(fresh))
            rounds += 1
            check(ac.acStreamDestroy(old))
        stop.set()
        for f in feeders:
            f.join()
        check(ac.acStreamSynchronize(current[0]))
        print("ok", rounds)
    """, env={"ACCINTE_LAUNCH_LATENCY_US": "0"})
    assert out.startswith("ok")


def test_a_device_synchronisation_runs_the_streams_in_the_order_their_work_began():
    # A deterministic order: which thread runs which task does not change from
    # run to run (with the streams' hash order it did, and a host that took a
    # stream waiting for another's event first left the rest to that worker).
    out = run_ok("""
        import threading
        ran = []

        @HOST_FN
        def note(index):  # a void* argument: 0 arrives as None
            ran.append((index or 0, threading.get_ident()))

        streams = [ctypes.c_void_p() for _ in range(8)]
        for stream in streams:
            check(ac.acStreamCreate(ctypes.byref(stream)))
        first_work = [5, 2, 7, 0, 3, 6, 1, 4]  # not the order of creation
        for index in first_work:
            check(ac.acLaunchHostFunc(streams[index], note, index))
        for index in first_work:
            check(ac.acStreamSynchronize(streams[index]))  # every worker is up
        ran.clear()
        for index in sorted(first_work):  # queued in yet another order
            check(ac.acLaunchHostFunc(streams[index], note, index))
        check(ac.acDeviceSynchronize())
        assert ran == [(index, threading.get_ident()) for index in first_work], ran
        print("ok")
    """, env={"ACCINTE_LAUNCH_LATENCY_US": "1000000"})
    assert out.strip() == "ok"
