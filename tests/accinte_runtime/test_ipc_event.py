"""Interprocess events (acEventInterprocess, acIpcGetEventHandle,
acIpcOpenEventHandle): waits in this and another process, a recorded-again
event, records completing out of order, an exporter that dies, handle
validation."""

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time

from accinte_ctypes import (_PRELUDE, EVENT_DISABLE_TIMING, EVENT_INTERPROCESS, CaptureMode, Err,
                            Gate, IpcEventHandle, IpcMemHandle, Kind, check, event_create,
                            library_path, malloc, run_ok)

IPC_FLAGS = EVENT_INTERPROCESS | EVENT_DISABLE_TIMING



def get_handle(ac, event):
    handle = IpcEventHandle()
    check(ac.acIpcGetEventHandle(ctypes.byref(handle), event))
    return handle


def open_handle(ac, handle):
    event = ctypes.c_void_p()
    check(ac.acIpcOpenEventHandle(ctypes.byref(event), handle))
    return event.value


def child(body):
    """A fresh interpreter running `body` with the library loaded as `ac`,
    talking to us through its stdin and stdout."""
    env = {"ACCINTE_LIBRARY": str(library_path()), "PATH": "/usr/bin:/bin",
           # an instrumented library needs its sanitizer runtime (make sanitize)
           **{k: v for k, v in os.environ.items()
              if k == "LD_PRELOAD" or k.startswith(("ASAN_", "UBSAN_"))}}
    return subprocess.Popen([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


# Child code: an interprocess event recorded behind a kernel that never
# finishes (the child's default stream stays busy), exported as `handle`.
EXPORTED_BEHIND_A_GATE = """
gate = Gate(ac).launch(None)
event = ctypes.c_void_p()
check(ac.acEventCreateWithFlags(ctypes.byref(event), EVENT_INTERPROCESS | EVENT_DISABLE_TIMING))
check(ac.acEventRecord(event, None))
handle = IpcEventHandle()
check(ac.acIpcGetEventHandle(ctypes.byref(handle), event))
"""


def test_flags_and_export_errors(ac):
    event = ctypes.c_void_p()
    # As in CUDA, an interprocess event does not time.
    assert ac.acEventCreateWithFlags(ctypes.byref(event), EVENT_INTERPROCESS) == Err.InvalidValue
    local = event_create(ac, EVENT_DISABLE_TIMING)
    shared = event_create(ac, IPC_FLAGS)
    handle = IpcEventHandle()
    assert ac.acIpcGetEventHandle(ctypes.byref(handle), local) == Err.InvalidResourceHandle
    assert ac.acIpcGetEventHandle(None, shared) == Err.InvalidValue
    assert ac.acIpcGetEventHandle(ctypes.byref(handle), 0x1234) == Err.InvalidResourceHandle
    opened = open_handle(ac, get_handle(ac, shared))
    # An opened event is neither recorded nor exported again here, and has no timing.
    assert ac.acEventRecord(opened, None) == Err.NotSupported
    assert ac.acIpcGetEventHandle(ctypes.byref(handle), opened) == Err.InvalidResourceHandle
    ms = ctypes.c_float()
    assert ac.acEventElapsedTime(ctypes.byref(ms), opened, opened) == Err.InvalidResourceHandle
    for e in (local, shared, opened):
        check(ac.acEventDestroy(e))


def test_opened_event_follows_the_exporters_records(ac, streams):
    s, waiter = streams(), streams()
    exported = event_create(ac, IPC_FLAGS)
    opened = open_handle(ac, get_handle(ac, exported))
    check(ac.acEventQuery(opened))  # never recorded: complete, as a local event
    check(ac.acEventSynchronize(opened))
    gate = Gate(ac).launch(s)
    check(ac.acEventRecord(exported, s))
    assert ac.acEventQuery(opened) == Err.NotReady
    check(ac.acStreamWaitEvent(waiter, opened, 0))
    assert ac.acStreamQuery(waiter) == Err.NotReady  # waits for the record
    gate.open()
    check(ac.acStreamSynchronize(waiter))
    assert gate.finished.is_set()
    check(ac.acEventQuery(opened))
    check(ac.acEventSynchronize(opened))
    # The record's publication lets the waiter through before its task has
    # returned on s: s is idle once synchronized.
    check(ac.acStreamSynchronize(s))
    check(ac.acEventRecord(exported, s))  # an idle stream: published at once
    check(ac.acEventQuery(opened))
    check(ac.acEventDestroy(opened))
    check(ac.acEventDestroy(exported))


def test_a_wait_keeps_the_record_that_was_latest_at_the_call(ac, streams):
    s, waiter = streams(), streams()
    exported = event_create(ac, IPC_FLAGS)
    opened = open_handle(ac, get_handle(ac, exported))
    first = Gate(ac).launch(s)
    check(ac.acEventRecord(exported, s))
    check(ac.acStreamWaitEvent(waiter, opened, 0))
    second = Gate(ac).launch(s)
    check(ac.acEventRecord(exported, s))  # recorded again behind the second gate
    first.open()
    check(ac.acStreamSynchronize(waiter))  # done without the second record
    assert not second.finished.is_set()
    assert ac.acEventQuery(opened) == Err.NotReady  # a new query sees the second record
    second.open()
    check(ac.acEventSynchronize(opened))
    assert second.finished.is_set()
    check(ac.acEventDestroy(opened))
    check(ac.acEventDestroy(exported))


def test_a_later_record_finishing_first_is_not_published_early(ac, streams):
    # Records on two streams: the second completes at once, the first is held.
    # "The latest record is done" must also mean every earlier one is.
    held, idle = streams(), streams()
    exported = event_create(ac, IPC_FLAGS)
    opened = open_handle(ac, get_handle(ac, exported))
    gate = Gate(ac).launch(held)
    check(ac.acEventRecord(exported, held))
    check(ac.acEventRecord(exported, idle))
    check(ac.acEventQuery(exported))  # locally: the latest record is done
    assert ac.acEventQuery(opened) == Err.NotReady
    gate.open()
    check(ac.acEventSynchronize(opened))
    assert gate.finished.is_set()
    check(ac.acEventDestroy(opened))
    check(ac.acEventDestroy(exported))


def test_destroyed_exporter_event_still_publishes_its_pending_record(ac, streams):
    s = streams()
    exported = event_create(ac, IPC_FLAGS)
    handle = get_handle(ac, exported)
    opened = open_handle(ac, handle)
    gate = Gate(ac).launch(s)
    check(ac.acEventRecord(exported, s))
    check(ac.acEventDestroy(exported))
    assert ac.acEventQuery(opened) == Err.NotReady
    gate.open()
    check(ac.acEventSynchronize(opened))
    check(ac.acStreamSynchronize(s))
    # Nothing pending and the exporter's event gone: the handle no longer opens.
    out = ctypes.c_void_p()
    assert ac.acIpcOpenEventHandle(ctypes.byref(out), handle) == Err.MapBufferObjectFailed
    check(ac.acEventDestroy(opened))


def test_invalid_handles_are_refused(ac):
    out = ctypes.c_void_p()
    exported = event_create(ac, IPC_FLAGS)
    handle = get_handle(ac, exported)
    assert ac.acIpcOpenEventHandle(None, handle) == Err.InvalidValue
    assert ac.acIpcOpenEventHandle(ctypes.byref(out), IpcEventHandle()) == \
        Err.MapBufferObjectFailed
    # A memory handle is not an event handle.
    ptr = malloc(ac, 64)
    mem = IpcMemHandle()
    check(ac.acIpcGetMemHandle(ctypes.byref(mem), ptr))
    assert ac.acIpcOpenEventHandle(ctypes.byref(out), IpcEventHandle.from_buffer_copy(mem)) == \
        Err.MapBufferObjectFailed
    check(ac.acFree(ptr))
    raw = bytearray(bytes(handle))
    wrong_name = bytearray(raw)
    wrong_name[24] ^= 0xFF  # the memfd's name: the descriptor names other memory
    assert ac.acIpcOpenEventHandle(ctypes.byref(out),
                                   IpcEventHandle.from_buffer_copy(wrong_name)) == \
        Err.MapBufferObjectFailed
    no_device = bytearray(raw)
    no_device[16:20] = (99).to_bytes(4, "little")
    assert ac.acIpcOpenEventHandle(ctypes.byref(out),
                                   IpcEventHandle.from_buffer_copy(no_device)) == Err.InvalidDevice
    check(ac.acEventDestroy(exported))


def test_interprocess_record_on_a_capturing_stream_is_refused(ac, streams):
    s = streams()
    exported = event_create(ac, IPC_FLAGS)
    check(ac.acStreamBeginCapture(s, CaptureMode.Global))
    assert ac.acEventRecord(exported, s) == Err.StreamCaptureUnsupported
    graph = ctypes.c_void_p()
    assert ac.acStreamEndCapture(s, ctypes.byref(graph)) == Err.StreamCaptureInvalidated
    check(ac.acEventDestroy(exported))


def test_another_process_waits_for_work_queued_here(ac, streams):
    # The parent queues a copy behind a held kernel and records the event
    # after it; the child waits for the event on its stream, then reads.
    s = streams()
    ptr = malloc(ac, 64)
    gate = Gate(ac).launch(s)
    data = ctypes.create_string_buffer(b"queued by the parent", 20)
    check(ac.acMemcpyAsync(ptr, data, 20, Kind.HostToDevice, s))
    exported = event_create(ac, IPC_FLAGS)
    check(ac.acEventRecord(exported, s))
    mem = IpcMemHandle()
    check(ac.acIpcGetMemHandle(ctypes.byref(mem), ptr))
    proc = child(f"""
        mem = IpcMemHandle.from_buffer_copy(bytes.fromhex("{bytes(mem).hex()}"))
        handle = IpcEventHandle.from_buffer_copy(bytes.fromhex("{bytes(get_handle(ac, exported)).hex()}"))
        ptr, event = ctypes.c_void_p(), ctypes.c_void_p()
        check(ac.acIpcOpenMemHandle(ctypes.byref(ptr), mem, 0))
        check(ac.acIpcOpenEventHandle(ctypes.byref(event), handle))
        print(error_name(ac.acEventQuery(event)), flush=True)
        check(ac.acStreamWaitEvent(None, event, 0))
        out = ctypes.create_string_buffer(20)
        check(ac.acMemcpyAsync(out, ptr, 20, Kind.DeviceToHost, None))
        sys.stdin.readline()
        check(ac.acStreamSynchronize(None))
        print(out.raw.decode(), flush=True)
        check(ac.acEventDestroy(event))
        check(ac.acIpcCloseMemHandle(ptr.value))
    """)
    try:
        assert proc.stdout.readline().strip() == "acErrorNotReady"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(0.05)
        assert not gate.finished.is_set()
        gate.open()
        assert proc.stdout.readline().strip() == "queued by the parent"
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    check(ac.acEventDestroy(exported))
    check(ac.acStreamSynchronize(s))
    check(ac.acFree(ptr))


def test_an_exporter_that_dies_does_not_hang_its_waiters(ac, streams):
    # The child records behind a kernel that never finishes, then is killed.
    proc = child(EXPORTED_BEHIND_A_GATE + textwrap.dedent("""
        print(bytes(handle).hex(), flush=True)
        sys.stdin.readline()
    """))
    try:
        handle = IpcEventHandle.from_buffer_copy(bytes.fromhex(proc.stdout.readline().strip()))
        opened = open_handle(ac, handle)
        waiter = streams()
        check(ac.acStreamWaitEvent(waiter, opened, 0))
        assert ac.acEventQuery(opened) == Err.NotReady
        proc.kill()
        proc.wait(timeout=30)
    finally:
        proc.kill()
    start = time.monotonic()
    assert ac.acStreamSynchronize(waiter) == Err.MapBufferObjectFailed
    assert ac.acEventSynchronize(opened) == Err.MapBufferObjectFailed
    assert ac.acEventQuery(opened) == Err.MapBufferObjectFailed
    assert time.monotonic() - start < 5
    check(ac.acStreamSynchronize(waiter))  # the error was reported once; the stream works
    out = ctypes.c_void_p()
    assert ac.acIpcOpenEventHandle(ctypes.byref(out), handle) == Err.MapBufferObjectFailed
    check(ac.acEventDestroy(opened))


def test_a_forked_child_of_the_exporter_does_not_keep_it_alive(ac, streams):
    # The grandchild inherits the page's descriptor, not the exporter's
    # records: once the exporter is gone, waits end.
    proc = child(EXPORTED_BEHIND_A_GATE + textwrap.dedent("""
        import time
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(30)
            os._exit(0)
        print(bytes(handle).hex(), grandchild, flush=True)
        sys.stdin.readline()
    """))
    grandchild = None
    try:
        line = proc.stdout.readline().split()
        handle, grandchild = IpcEventHandle.from_buffer_copy(bytes.fromhex(line[0])), int(line[1])
        opened = open_handle(ac, handle)
        waiter = streams()
        check(ac.acStreamWaitEvent(waiter, opened, 0))
        proc.kill()
        proc.wait(timeout=30)
        start = time.monotonic()
        assert ac.acStreamSynchronize(waiter) == Err.MapBufferObjectFailed
        assert time.monotonic() - start < 5
        check(ac.acEventDestroy(opened))
    finally:
        proc.kill()
        if grandchild is not None:
            os.kill(grandchild, signal.SIGKILL)


# ---- descriptors: Note [IPC event pages] ---------------------------------------

SLOTS_PER_PAGE = 1023  # kSlotsPerPage in ipc_event.cpp


def open_descriptors():
    return len(os.listdir("/proc/self/fd"))


def lower_descriptor_limit(soft):
    """Child code: the soft RLIMIT_NOFILE set to `soft` before the runtime
    first counts its descriptor budget (half of it)."""
    return f"""
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           ({soft}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    """


def test_thousands_of_events_share_a_few_descriptors(ac, streams):
    # 3000 events exported by a process allowed 64 descriptors (a budget of
    # 32), all pending behind a held kernel, opened and waited for here: a
    # page of events per descriptor on both sides.
    count = 3000
    proc = child(textwrap.dedent(lower_descriptor_limit(64)) + textwrap.dedent(f"""
        gate = Gate(ac).launch(None)
        handles = []
        for _ in range({count}):
            event = ctypes.c_void_p()
            check(ac.acEventCreateWithFlags(ctypes.byref(event), EVENT_INTERPROCESS | EVENT_DISABLE_TIMING))
            check(ac.acEventRecord(event, None))
            handle = IpcEventHandle()
            check(ac.acIpcGetEventHandle(ctypes.byref(handle), event))
            handles.append(bytes(handle).hex())
        print(len(os.listdir("/proc/self/fd")), " ".join(handles), flush=True)
        sys.stdin.readline()
        gate.open()
        check(ac.acStreamSynchronize(None))
        sys.stdin.readline()
    """))
    try:
        line = proc.stdout.readline().split()
        assert len(line) == count + 1, "the exporter failed (see its stderr)"
        assert int(line[0]) < 64
        before = open_descriptors()
        waiter = streams()
        opened = []
        for text in line[1:]:
            opened.append(open_handle(ac, IpcEventHandle.from_buffer_copy(bytes.fromhex(text))))
            check(ac.acStreamWaitEvent(waiter, opened[-1], 0))
        assert open_descriptors() - before <= -(-count // SLOTS_PER_PAGE)
        assert ac.acStreamQuery(waiter) == Err.NotReady
        assert ac.acEventQuery(opened[0]) == Err.NotReady
        proc.stdin.write("go\n")
        proc.stdin.flush()
        check(ac.acStreamSynchronize(waiter))
        for event in opened:
            check(ac.acEventQuery(event))
            check(ac.acEventDestroy(event))
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    assert open_descriptors() <= before  # the pages closed with their last events


def test_a_reused_slot_is_not_mistaken_for_the_event_it_held(ac, streams):
    s = streams()
    first = event_create(ac, IPC_FLAGS)
    first_handle = get_handle(ac, first)
    first_opened = open_handle(ac, first_handle)
    gate = Gate(ac).launch(s)
    check(ac.acEventRecord(first, s))
    check(ac.acEventDestroy(first))
    gate.open()
    check(ac.acStreamSynchronize(s))  # the record ran: the slot is free
    second = event_create(ac, IPC_FLAGS)
    second_handle = get_handle(ac, second)
    assert bytes(second_handle)[20:24] == bytes(first_handle)[20:24]  # the same slot
    out = ctypes.c_void_p()
    assert ac.acIpcOpenEventHandle(ctypes.byref(out), first_handle) == Err.MapBufferObjectFailed
    second_opened = open_handle(ac, second_handle)
    held = Gate(ac).launch(s)
    check(ac.acEventRecord(second, s))
    # The first event's records all completed; the slot's new record is not its.
    check(ac.acEventQuery(first_opened))
    check(ac.acEventSynchronize(first_opened))
    assert ac.acEventQuery(second_opened) == Err.NotReady
    held.open()
    check(ac.acEventSynchronize(second_opened))
    for e in (first_opened, second_opened, second):
        check(ac.acEventDestroy(e))
    check(ac.acStreamSynchronize(s))


def test_running_out_of_descriptors_is_a_clear_error(ac):
    # A soft limit of 24 gives a budget of 12 descriptors, all taken by pages
    # of events: then creating one more, or opening a page of another process
    # or memory, fails with acErrorIpcDescriptorsExhausted, and the process
    # still has descriptors for its files. A destroyed event's slot is reused.
    exported = event_create(ac, IPC_FLAGS)
    handle = get_handle(ac, exported)
    ptr = malloc(ac, 64)
    mem = IpcMemHandle()
    check(ac.acIpcGetMemHandle(ctypes.byref(mem), ptr))
    out = run_ok(textwrap.dedent(lower_descriptor_limit(24)) + textwrap.dedent(f"""
        fds_before = len(os.listdir("/proc/self/fd"))
        events = []
        while True:
            event = ctypes.c_void_p()
            err = ac.acEventCreateWithFlags(ctypes.byref(event), EVENT_INTERPROCESS | EVENT_DISABLE_TIMING)
            if err != 0:
                break
            events.append(event.value)
        print(len(events), error_name(err))
        other, opened = ctypes.c_void_p(), ctypes.c_void_p()
        handle = IpcEventHandle.from_buffer_copy(bytes.fromhex("{bytes(handle).hex()}"))
        print(error_name(ac.acIpcOpenEventHandle(ctypes.byref(other), handle)))
        mem = IpcMemHandle.from_buffer_copy(bytes.fromhex("{bytes(mem).hex()}"))
        print(error_name(ac.acIpcOpenMemHandle(ctypes.byref(opened), mem, 0)))
        os.close(os.open("/dev/null", os.O_RDONLY))
        check(ac.acEventDestroy(events.pop()))
        event = ctypes.c_void_p()
        check(ac.acEventCreateWithFlags(ctypes.byref(event), EVENT_INTERPROCESS | EVENT_DISABLE_TIMING))
        check(ac.acEventRecord(event.value, None))
        check(ac.acEventSynchronize(event.value))
        print("reused")
        # Destroyed, the events give their pages back, but for one.
        for e in events + [event.value]:
            check(ac.acEventDestroy(e))
        ptr = malloc(ac, 64)
        check(ac.acIpcGetMemHandle(ctypes.byref(mem), ptr))
        print(len(os.listdir("/proc/self/fd")) - fds_before)
    """))
    created, error, open_error, mem_error, reused, descriptors_left = out.split()
    assert int(created) == 12 * SLOTS_PER_PAGE
    assert error == open_error == mem_error == "acErrorIpcDescriptorsExhausted"
    assert reused == "reused"
    assert int(descriptors_left) == 2  # the last page and the new memory
    check(ac.acEventDestroy(exported))
    check(ac.acFree(ptr))
