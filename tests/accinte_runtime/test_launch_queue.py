"""The bounded launch queue (Note [accinte launch queue depth]): once
ACCINTE_LAUNCH_QUEUE_DEPTH tasks wait on a stream, launches block until the
worker takes the next one; event records and waits never block; launches
from a worker thread never block; bad values fall back to the default."""

from accinte_ctypes import run_ok

DEPTH_4 = {"ACCINTE_LAUNCH_QUEUE_DEPTH": "4"}


def test_launch_blocks_while_the_queue_is_full():
    run_ok("""
        import threading, time
        stream = stream_create(ac)
        gate = Gate(ac).launch(stream)            # running: not in the queue
        assert gate.started.wait(10)
        buf = malloc(ac, 64)
        for _ in range(4):                        # fills the queue
            check(ac.acMemsetAsync(buf, 1, 64, stream))
        returned = threading.Event()
        def launch_one_more():
            check(ac.acMemsetAsync(buf, 2, 64, stream))
            returned.set()
        launcher = threading.Thread(target=launch_one_more)
        launcher.start()
        assert not returned.wait(0.5), "a launch into a full queue returned"
        # Event records and waits are queued anyway.
        event = event_create(ac)
        begin = time.monotonic()
        check(ac.acEventRecord(event, stream))
        check(ac.acStreamWaitEvent(stream, event, 0))
        assert time.monotonic() - begin < 0.4
        gate.open()
        assert returned.wait(10), "the launch never returned after the queue drained"
        launcher.join()
        check(ac.acStreamSynchronize(stream))
        assert read_device(ac, buf, 64) == bytes([2]) * 64
    """, env=DEPTH_4, timeout=60)


def test_each_launch_kind_waits_for_room():
    # Kernel launches, host functions, asynchronous copies and memsets, and
    # graph launches all count against the depth.
    run_ok("""
        import threading
        stream = stream_create(ac)
        buf = malloc(ac, 64)
        host = ctypes.create_string_buffer(64)
        noop = HOST_FN(lambda _: None)
        launches = {
            "host function": lambda: ac.acLaunchHostFunc(stream, noop, None),
            # from pageable memory: into it, a copy waits for the stream
            # (Note [accinte copies into pageable memory])
            "memcpy": lambda: ac.acMemcpyAsync(buf, host, 64, Kind.HostToDevice, stream),
            "memset": lambda: ac.acMemsetAsync(buf, 0, 64, stream),
        }
        for name, launch in launches.items():
            gate = Gate(ac).launch(stream)
            assert gate.started.wait(10)
            for _ in range(4):
                check(launch())
            returned = threading.Event()
            thread = threading.Thread(target=lambda: (check(launch()), returned.set()))
            thread.start()
            assert not returned.wait(0.3), name
            gate.open()
            assert returned.wait(10), name
            thread.join()
            check(ac.acStreamSynchronize(stream))
    """, env=DEPTH_4, timeout=60)


def test_host_function_may_launch_into_its_own_full_queue():
    # A task that launches more work on its own stream must not wait for a
    # queue only its own worker drains.
    run_ok("""
        stream = stream_create(ac)
        noop = HOST_FN(lambda _: None)
        def body(_):
            for _ in range(20):
                check(ac.acLaunchHostFunc(stream, noop, None))
        fn = HOST_FN(body)
        check(ac.acLaunchHostFunc(stream, fn, None))
        check(ac.acStreamSynchronize(stream))   # body has run: its launches are queued
        check(ac.acStreamSynchronize(stream))   # and now they have run too
    """, env=DEPTH_4, timeout=30)


def test_four_producers_stay_bounded():
    # Four threads launch 20000 small tasks each onto streams kept busy for
    # a second: with a depth of 64 every producer is held back until the
    # busy task ends, and nothing is lost.
    run_ok("""
        import threading, time
        libc = ctypes.CDLL(None)
        count = [0] * 4
        lock = threading.Lock()
        streams = [stream_create(ac) for _ in range(4)]
        buf = malloc(ac, 4096)
        def produce(k):
            check(ac.acLaunchHostFunc(streams[k], ctypes.cast(libc.usleep, HOST_FN), 1_000_000))
            for _ in range(20000):
                check(ac.acMemsetAsync(buf + 1024 * k, k, 1024, streams[k]))
        begin = time.monotonic()
        threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert time.monotonic() - begin >= 0.9
        for s in streams:
            check(ac.acStreamSynchronize(s))
        assert read_device(ac, buf, 4096) == b"".join(bytes([k]) * 1024 for k in range(4))
    """, env={"ACCINTE_LAUNCH_QUEUE_DEPTH": "64"}, timeout=60)


def test_invalid_depths_fall_back_to_the_default():
    for value in ("0", "-3", "abc", "4k", str(2**21)):
        run_ok("""
            stream = stream_create(ac)
            gate = Gate(ac).launch(stream)
            assert gate.started.wait(10)
            buf = malloc(ac, 64)
            for _ in range(1000):                  # below the default depth of 1024
                check(ac.acMemsetAsync(buf, 1, 64, stream))
            gate.open()
            check(ac.acStreamSynchronize(stream))
        """, env={"ACCINTE_LAUNCH_QUEUE_DEPTH": value}, timeout=30)
