"""Activity records (acActivity*): what a profiler reads from the runtime.

See Note [accinte activity records] in accinte.h.
"""

import ctypes
import threading
import time
from ctypes import c_size_t, c_uint64

import pytest
from accinte_ctypes import (KERNEL_FN, ActivityKind, ActivityRecord, Err, Kind, activity_records,
                            check, malloc, stream_create)

RECORDED_KINDS = [ActivityKind.Kernel, ActivityKind.Memcpy, ActivityKind.Memset,
                  ActivityKind.Runtime, ActivityKind.Synchronization]


@pytest.fixture
def tracing(ac):
    """Every kind enabled for the test; disabled and emptied afterwards."""
    check(ac.acActivityClear())
    for kind in RECORDED_KINDS:
        check(ac.acActivityEnable(kind))
    yield
    for kind in RECORDED_KINDS:
        check(ac.acActivityDisable(kind))
    check(ac.acActivityFlushAll())
    check(ac.acActivityClear())


def sleeper(seconds):
    def body(_):
        time.sleep(seconds)
        return 0
    return KERNEL_FN(body)


def of_kind(records, kind):
    return [r for r in records if r.kind == kind]


def test_nothing_is_recorded_while_disabled(ac):
    check(ac.acActivityClear())
    stream = stream_create(ac)
    fn = sleeper(0)
    dev = malloc(ac, 64)
    host = ctypes.create_string_buffer(64)
    check(ac.acLaunchKernelNamed(stream, fn, None, b"quiet"))
    check(ac.acMemcpyAsync(dev, host, 64, Kind.HostToDevice, stream))
    check(ac.acStreamSynchronize(stream))
    assert activity_records(ac) == []
    check(ac.acFree(dev))
    check(ac.acStreamDestroy(stream))


def test_unknown_kinds_are_refused(ac):
    assert ac.acActivityEnable(ActivityKind.ExternalCorrelation) == Err.InvalidValue
    assert ac.acActivityEnable(0) == Err.InvalidValue
    assert ac.acActivityDisable(77) == Err.InvalidValue
    assert ac.acActivityGetRecords(None, 0, None) == Err.InvalidValue


def test_kernel_records_are_named_timed_and_follow_stream_order(ac, tracing):
    stream = stream_create(ac)
    fn = sleeper(0.02)
    before = c_uint64()
    check(ac.acActivityGetTimestamp(ctypes.byref(before)))
    for name in (b"first", b"second", b"third"):
        check(ac.acLaunchKernelNamed(stream, fn, None, name))
    check(ac.acLaunchKernel(stream, fn, None))
    check(ac.acStreamSynchronize(stream))
    records = activity_records(ac)
    kernels = of_kind(records, ActivityKind.Kernel)
    assert [k.name for k in kernels] == [b"first", b"second", b"third", b"kernel"]
    launches = {r.correlationId: r for r in of_kind(records, ActivityKind.Runtime)
                if r.name == b"acLaunchKernel"}
    for k in kernels:
        assert k.stream == stream and k.device == 0
        assert 0.018e9 <= k.end - k.start <= 0.5e9  # the kernel's own 20 ms
        assert k.start >= before.value
        launch = launches[k.correlationId]  # one correlation id per launch and kernel
        assert launch.start <= k.start and launch.threadId > 0
    # Per stream: monotonic and non-overlapping.
    for a, b in zip(kernels, kernels[1:]):
        assert a.end <= b.start
    syncs = of_kind(records, ActivityKind.Synchronization)
    assert [s.name for s in syncs] == [b"acStreamSynchronize"]
    assert syncs[0].end >= kernels[-1].end
    check(ac.acStreamDestroy(stream))


def test_copy_records_carry_bytes_direction_and_stream(ac, tracing):
    stream = stream_create(ac)
    size = 16 << 20  # split across the copy engines, still one record
    dev = malloc(ac, size)
    host = ctypes.create_string_buffer(size)
    check(ac.acMemcpyAsync(dev, host, size, Kind.Default, stream))
    check(ac.acMemsetAsync(dev, 1, 1000, stream))
    check(ac.acStreamSynchronize(stream))
    check(ac.acMemcpy(host, dev, 4096, Kind.DeviceToHost))
    # Into pageable memory: done on the calling thread, on the stream's behalf.
    check(ac.acMemcpyAsync(host, dev, 512, Kind.DeviceToHost, stream))
    records = activity_records(ac)
    copies = of_kind(records, ActivityKind.Memcpy)
    assert [(c.bytes, c.copyKind) for c in copies] == [
        (size, Kind.HostToDevice), (4096, Kind.DeviceToHost), (512, Kind.DeviceToHost)]
    assert copies[0].stream == stream and copies[0].device == 0
    assert copies[1].stream is None and copies[1].device == 0  # synchronous: calling thread
    assert copies[2].stream == stream and copies[2].device == 0
    sets = of_kind(records, ActivityKind.Memset)
    assert [(s.bytes, s.stream) for s in sets] == [(1000, stream)]
    apis = [r.name for r in of_kind(records, ActivityKind.Runtime)]
    assert apis == [b"acMemcpyAsync", b"acMemsetAsync", b"acMemcpy", b"acMemcpyAsync"]
    check(ac.acFree(dev))
    check(ac.acStreamDestroy(stream))


def test_external_ids_nest_per_thread(ac, tracing):
    stream = stream_create(ac)
    fn = sleeper(0)
    check(ac.acActivityPushExternalCorrelationId(7))
    check(ac.acActivityPushExternalCorrelationId(9))
    check(ac.acLaunchKernelNamed(stream, fn, None, b"inner"))

    def other_thread():  # its stack is empty: its launch is linked to nothing
        check(ac.acLaunchKernelNamed(stream, fn, None, b"elsewhere"))
    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    popped = c_uint64()
    check(ac.acActivityPopExternalCorrelationId(ctypes.byref(popped)))
    assert popped.value == 9
    check(ac.acLaunchKernelNamed(stream, fn, None, b"outer"))
    check(ac.acActivityPopExternalCorrelationId(ctypes.byref(popped)))
    assert popped.value == 7
    assert ac.acActivityPopExternalCorrelationId(None) == Err.InvalidValue
    check(ac.acStreamSynchronize(stream))
    records = activity_records(ac)
    external = {r.correlationId: r.externalId
                for r in of_kind(records, ActivityKind.ExternalCorrelation)}
    linked = {k.name: external.get(k.correlationId) for k in of_kind(records, ActivityKind.Kernel)}
    assert linked == {b"inner": 9, b"elsewhere": None, b"outer": 7}
    check(ac.acStreamDestroy(stream))


def test_graph_replays_are_recorded_on_the_replay_stream(ac, tracing):
    capturing, replay = stream_create(ac), stream_create(ac)
    fn = sleeper(0)
    graph, exec_ = ctypes.c_void_p(), ctypes.c_void_p()
    check(ac.acStreamBeginCapture(capturing, 0))
    check(ac.acLaunchKernelNamed(capturing, fn, None, b"captured"))
    check(ac.acStreamEndCapture(capturing, ctypes.byref(graph)))
    check(ac.acGraphInstantiate(ctypes.byref(exec_), graph, 0))
    check(ac.acActivityClear())
    for _ in range(2):
        check(ac.acGraphLaunch(exec_, replay))
    check(ac.acStreamSynchronize(replay))
    kernels = of_kind(activity_records(ac), ActivityKind.Kernel)
    assert [(k.name, k.stream) for k in kernels] == [(b"captured", replay)] * 2
    check(ac.acGraphExecDestroy(exec_))
    check(ac.acGraphDestroy(graph))
    for s in (capturing, replay):
        check(ac.acStreamDestroy(s))


def test_records_are_read_in_portions(ac, tracing):
    stream = stream_create(ac)
    fn = sleeper(0)
    for _ in range(5):
        check(ac.acLaunchKernelNamed(stream, fn, None, b"k"))
    check(ac.acStreamSynchronize(stream))
    check(ac.acActivityFlushAll())
    buf = (ActivityRecord * 3)()
    count = c_size_t()
    check(ac.acActivityGetRecords(buf, 3, ctypes.byref(count)))
    assert count.value == 3
    rest = activity_records(ac)
    assert len(rest) == 5 + 5 + 1 - 3  # kernels, launches, the synchronize
    check(ac.acStreamDestroy(stream))
