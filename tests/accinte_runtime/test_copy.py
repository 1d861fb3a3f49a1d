"""Copies and memsets: every direction, validation, synchronous vs queued."""

import ctypes
import threading
import time

import pytest

from accinte_ctypes import (HOST_FN, KERNEL_FN, Err, Gate, Kind, check, malloc, read_device,
                            stream_create, write_device)

H2H, H2D, D2H, D2D, DEFAULT = (Kind.HostToHost, Kind.HostToDevice, Kind.DeviceToHost,
                               Kind.DeviceToDevice, Kind.Default)


@pytest.fixture
def dev(ac):
    """Allocates device memory on the current device; frees it afterwards."""
    ptrs = []

    def alloc(size):
        ptrs.append(malloc(ac, size))
        return ptrs[-1]

    yield alloc
    for p in ptrs:
        check(ac.acFree(p))


def buffer(data):
    return ctypes.create_string_buffer(bytes(data), len(data))


@pytest.mark.parametrize("kind_in, kind_out", [(H2D, D2H), (DEFAULT, DEFAULT)])
def test_host_device_round_trip(ac, dev, kind_in, kind_out):
    d = dev(256)
    src, dst = buffer(range(256)), ctypes.create_string_buffer(256)
    check(ac.acMemcpy(d, src, 256, kind_in))
    check(ac.acMemcpy(dst, d, 256, kind_out))
    assert dst.raw == bytes(range(256))


@pytest.mark.parametrize("kind", [D2D, DEFAULT])
def test_device_to_device_on_one_device(ac, dev, kind):
    a, b = dev(64), dev(64)
    write_device(ac, a, b"x" * 64)
    check(ac.acMemcpy(b, a, 64, kind))
    assert read_device(ac, b, 64) == b"x" * 64


def test_overlapping_copy_within_one_allocation(ac, dev):
    a = dev(16)
    write_device(ac, a, b"0123456789abcdef")
    check(ac.acMemcpy(a + 2, a, 8, D2D))
    assert read_device(ac, a, 16) == b"01" + b"01234567" + b"abcdef"


# Copies of 8 MiB or more are split across the copy engines (copy_engine.cpp)
# in 1 MiB chunks; these sizes cover a partial last chunk and many chunks.
LARGE_SIZES = [(8 << 20) + 12345, (19 << 20) + 1]


def pattern(size, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(256)) * (size // 256) + bytes(size % 256)


@pytest.mark.parametrize("size", LARGE_SIZES)
def test_large_copies_every_direction(ac, dev, size):
    a, b = dev(size), dev(size)
    src, dst = buffer(pattern(size, 7)), ctypes.create_string_buffer(size)
    check(ac.acMemcpy(a, src, size, H2D))
    check(ac.acMemcpy(b, a, size, D2D))
    check(ac.acMemcpy(dst, b, size, D2H))
    assert dst.raw == src.raw


@pytest.mark.parametrize("shift", [1, (3 << 20) + 5])
def test_large_overlapping_copy_is_a_memmove(ac, dev, shift):
    size = 12 << 20
    a = dev(size + shift)
    data = pattern(size, 3)
    write_device(ac, a, data)
    check(ac.acMemcpy(a + shift, a, size, D2D))
    assert read_device(ac, a + shift, size) == data


def test_large_memset(ac, dev):
    size = LARGE_SIZES[1]
    d = dev(size)
    check(ac.acMemset(d, ord("q"), size))
    assert read_device(ac, d, size) == b"q" * size


def test_large_async_copies_on_two_streams_at_once(ac, dev):
    # Both stream workers split their copies over the same engines at once:
    # each must still finish with its own bytes.
    size = LARGE_SIZES[1]
    streams = [stream_create(ac), stream_create(ac)]
    sources = [buffer(pattern(size, seed)) for seed in (1, 2)]
    targets = [dev(size), dev(size)]
    results = [ctypes.create_string_buffer(size) for _ in streams]
    for stream, src, d, out in zip(streams, sources, targets, results):
        check(ac.acMemcpyAsync(d, src, size, H2D, stream))
        check(ac.acMemcpyAsync(out, d, size, D2H, stream))
    for stream in streams:
        check(ac.acStreamSynchronize(stream))
        check(ac.acStreamDestroy(stream))
    assert [r.raw for r in results] == [s.raw for s in sources]


@pytest.mark.parametrize("kind", [D2D, DEFAULT])
def test_device_to_device_across_devices(ac, dev, two_devices, kind):
    a = dev(32)
    check(ac.acSetDevice(1))
    b = dev(32)
    check(ac.acSetDevice(0))
    write_device(ac, a, b"cross-device" + bytes(20))
    check(ac.acMemcpy(b, a, 32, kind))
    assert read_device(ac, b, 12) == b"cross-device"


@pytest.mark.parametrize("kind", [H2H, DEFAULT])
def test_host_to_host(ac, kind):
    src, dst = buffer(b"hello"), ctypes.create_string_buffer(5)
    check(ac.acMemcpy(dst, src, 5, kind))
    assert dst.raw == b"hello"


def test_pinned_host_memory_is_host_memory(ac, dev):
    pinned = ctypes.c_void_p()
    check(ac.acMallocHost(ctypes.byref(pinned), 8))
    d = dev(8)
    ctypes.memmove(pinned.value, b"pinned!!", 8)
    check(ac.acMemcpy(d, pinned, 8, H2D))
    assert ac.acMemcpy(d, pinned, 8, D2D) == Err.InvalidMemcpyDirection
    assert read_device(ac, d, 8) == b"pinned!!"
    check(ac.acFreeHost(pinned))


def test_kind_must_match_the_pointers(ac, dev):
    d, d2 = dev(16), dev(16)
    host = ctypes.create_string_buffer(16)
    bad = [
        (host, host, H2D),  # H2D with a host destination
        (d, d2, H2D),       # ... or a device source
        (host, host, D2H),  # D2H with a host source
        (d, d2, D2H),       # ... or a device destination
        (d, host, D2D),
        (host, d, D2D),
        (d, host, H2H),
        (host, d, H2H),
    ]
    for dst, src, kind in bad:
        assert ac.acMemcpy(dst, src, 16, kind) == Err.InvalidMemcpyDirection, (kind, dst, src)
        assert ac.acMemcpyAsync(dst, src, 16, kind, None) == Err.InvalidMemcpyDirection
    for kind in (-1, 5, 99):  # not a kind at all
        assert ac.acMemcpy(host, host, 16, kind) == Err.InvalidMemcpyDirection


def test_device_range_must_fit_its_allocation(ac, dev):
    d = dev(100)
    host = ctypes.create_string_buffer(200)
    assert ac.acMemcpy(d, host, 101, H2D) == Err.InvalidValue
    assert ac.acMemcpy(d + 50, host, 51, H2D) == Err.InvalidValue
    assert ac.acMemcpy(host, d + 99, 2, D2H) == Err.InvalidValue
    assert ac.acMemcpyAsync(host, d, 101, DEFAULT, None) == Err.InvalidValue
    assert ac.acMemset(d + 1, 0, 100) == Err.InvalidValue
    assert ac.acMemsetAsync(d, 0, 101, None) == Err.InvalidValue
    check(ac.acMemcpy(d + 50, host, 50, H2D))  # exactly to the end is fine


def test_null_pointers_are_invalid(ac, dev):
    d = dev(8)
    assert ac.acMemcpy(None, d, 8, DEFAULT) == Err.InvalidValue
    assert ac.acMemcpy(d, None, 8, DEFAULT) == Err.InvalidValue


def test_zero_count_is_a_no_op(ac):
    check(ac.acMemcpy(None, None, 0, H2D))
    check(ac.acMemcpyAsync(None, None, 0, D2H, None))
    check(ac.acMemset(None, 0, 0))
    check(ac.acMemsetAsync(None, 0, 0, None))


def test_memset(ac, dev):
    d = dev(64)
    check(ac.acMemset(d, 0x1234, 64))  # only the low byte counts
    check(ac.acMemset(d + 8, ord("z"), 4))
    assert read_device(ac, d, 16) == b"\x34" * 8 + b"zzzz" + b"\x34" * 4


def test_memset_needs_device_memory(ac):
    host = ctypes.create_string_buffer(8)
    assert ac.acMemset(ctypes.addressof(host), 0, 8) == Err.InvalidDevicePointer
    assert ac.acMemsetAsync(ctypes.addressof(host), 0, 8, None) == Err.InvalidDevicePointer


@pytest.fixture
def pinned(ac):
    """Allocates pinned host memory (acMallocHost); frees it afterwards."""
    ptrs = []

    def alloc(size):
        ptrs.append(ctypes.c_void_p())
        check(ac.acMallocHost(ctypes.byref(ptrs[-1]), size))
        return ptrs[-1]

    yield alloc
    for p in ptrs:
        check(ac.acFreeHost(p))


def test_memcpy_async_into_pinned_memory_runs_on_the_stream_in_order(ac, dev, pinned):
    stream = stream_create(ac)
    d = dev(8)
    write_device(ac, d, b"new data")
    host = pinned(8)
    ctypes.memmove(host, b"old data", 8)
    gate = Gate(ac).launch(stream)
    check(ac.acMemcpyAsync(host, d, 8, D2H, stream))
    # Queued behind the gate: nothing has been copied yet.
    assert ac.acStreamQuery(stream) == Err.NotReady
    assert ctypes.string_at(host, 8) == b"old data"
    gate.open()
    check(ac.acStreamSynchronize(stream))
    assert ctypes.string_at(host, 8) == b"new data"
    check(ac.acStreamDestroy(stream))


def test_memcpy_async_into_pageable_memory_waits_for_its_stream(ac, dev):
    # As cudaMemcpyAsync: the copy is done when the call returns (Note
    # [accinte copies into pageable memory]), after the work queued before it.
    stream = stream_create(ac)
    d = dev(8)
    write_device(ac, d, b"old data")
    host = buffer(b"........")
    gate = Gate(ac).launch(stream)
    check(ac.acMemcpyAsync(d, buffer(b"new data"), 8, H2D, stream))  # behind the gate
    opener = threading.Timer(0.2, gate.open)
    opener.start()
    started = time.monotonic()
    check(ac.acMemcpyAsync(host, d, 8, D2H, stream))
    assert time.monotonic() - started > 0.1  # it waited for the gate
    assert host.raw == b"new data"  # and copied what the stream wrote
    check(ac.acStreamQuery(stream))
    opener.join()
    check(ac.acStreamDestroy(stream))


def test_memcpy_async_into_pageable_memory_is_queued_from_a_host_function(ac, dev):
    # On the stream's own worker a wait for the stream would never end: the
    # copy is queued behind the host function instead.
    stream = stream_create(ac)
    d = dev(8)
    write_device(ac, d, b"new data")
    host = buffer(b"old data")
    results = []

    @HOST_FN
    def copy_from_the_worker(_):
        results.append(ac.acMemcpyAsync(host, d, 8, D2H, stream))
        results.append(host.raw)

    check(ac.acLaunchHostFunc(stream, copy_from_the_worker, None))
    check(ac.acStreamSynchronize(stream))
    assert results == [Err.Success, b"old data"]  # queued, not run in the call
    # A synchronisation waits for the tasks queued before it; the copy was
    # queued while it waited, and the next one waits for it.
    check(ac.acStreamSynchronize(stream))
    assert host.raw == b"new data"
    check(ac.acStreamDestroy(stream))


def test_memset_async_runs_on_the_stream_in_order(ac, dev, pinned):
    stream = stream_create(ac)
    d = dev(4)
    write_device(ac, d, b"aaaa")
    host = pinned(4)
    ctypes.memmove(host, b"....", 4)
    gate = Gate(ac).launch(stream)
    check(ac.acMemsetAsync(d, ord("b"), 4, stream))
    check(ac.acMemcpyAsync(host, d, 4, D2H, stream))
    assert ctypes.string_at(host, 4) == b"...."
    gate.open()
    check(ac.acStreamSynchronize(stream))
    assert ctypes.string_at(host, 4) == b"bbbb"
    check(ac.acStreamDestroy(stream))


def test_null_stream_is_the_current_devices_default_stream(ac, dev, pinned, two_devices):
    check(ac.acSetDevice(1))
    d = dev(4)
    default1 = ctypes.c_void_p()
    check(ac.acDeviceGetDefaultStream(1, ctypes.byref(default1)))
    gate = Gate(ac).launch(None)  # NULL: device 1's default stream
    host = pinned(4)
    check(ac.acMemsetAsync(d, ord("q"), 4, None))
    check(ac.acMemcpyAsync(host, d, 4, DEFAULT, None))
    assert ac.acStreamQuery(default1) == Err.NotReady
    gate.open()
    check(ac.acStreamSynchronize(default1))
    assert ctypes.string_at(host, 4) == b"qqqq"


def test_async_copy_across_devices_on_a_stream_of_either(ac, dev, two_devices):
    a = dev(6)
    write_device(ac, a, b"device")
    check(ac.acSetDevice(1))
    b = dev(6)
    stream1 = stream_create(ac)
    check(ac.acMemcpyAsync(b, a, 6, D2D, stream1))
    check(ac.acStreamSynchronize(stream1))
    check(ac.acStreamDestroy(stream1))
    assert read_device(ac, b, 6) == b"device"


def test_freed_allocation_is_refused_while_a_queued_copy_keeps_it(ac, two_devices):
    # A thread remembers what its last copy found at each end (Note [accinte
    # finding allocations without the lock]). Once acFree has taken an
    # allocation out of the registry, a copy from it is refused, even while
    # a copy queued on another device's stream (which acFree does not wait
    # for) still keeps its memory.
    d = malloc(ac, 4)  # device 0
    write_device(ac, d, b"abcd")
    check(ac.acSetDevice(1))
    b = malloc(ac, 4)
    stream1 = stream_create(ac)
    gate = Gate(ac).launch(stream1)
    try:
        check(ac.acMemcpyAsync(b, d, 4, D2D, stream1))  # queued: holds d
        check(ac.acSetDevice(0))
        host = buffer(b"....")
        check(ac.acMemcpyAsync(host, d, 4, D2H, None))  # this thread found both ends
        assert host.raw[:4] == b"abcd"
        check(ac.acFree(d))
        assert ac.acMemcpyAsync(host, d, 4, D2H, None) == Err.InvalidMemcpyDirection
    finally:
        gate.open()
        check(ac.acStreamSynchronize(stream1))
        check(ac.acStreamDestroy(stream1))
    assert read_device(ac, b, 4) == b"abcd"  # the queued copy ran on the kept memory
    check(ac.acFree(b))


def test_async_with_invalid_stream(ac, dev):
    d = dev(4)
    host = buffer(b"....")
    stream = stream_create(ac)
    check(ac.acStreamDestroy(stream))
    assert ac.acMemcpyAsync(host, d, 4, D2H, stream) == Err.InvalidResourceHandle
    assert ac.acMemsetAsync(d, 0, 4, stream) == Err.InvalidResourceHandle


def test_synchronous_copy_waits_for_queued_work_on_the_device(ac, dev):
    # A slow kernel writes device memory; acMemcpy must see its result.
    stream = stream_create(ac)
    d = dev(4)
    write_device(ac, d, b"....")

    def kernel(_):
        time.sleep(0.1)
        ctypes.memmove(d, b"done", 4)
        return 0

    fn = KERNEL_FN(kernel)
    check(ac.acLaunchKernel(stream, fn, None))
    assert read_device(ac, d, 4) == b"done"
    check(ac.acStreamSynchronize(stream))
    check(ac.acStreamDestroy(stream))


def test_synchronous_copy_waits_for_a_stream_already_running(ac, dev):
    # A device wait looks at the streams whose worker has started (registered
    # at their first launch): a later launch on such a stream is waited for
    # too, and a destroyed stream drops out without disturbing the others.
    d = dev(4)
    write_device(ac, d, b"....")
    gone = stream_create(ac)
    stream = stream_create(ac)
    idle = KERNEL_FN(lambda _: 0)
    for s in (gone, stream):
        check(ac.acLaunchKernel(s, idle, None))  # starts its worker
        check(ac.acStreamSynchronize(s))
    check(ac.acStreamDestroy(gone))

    def kernel(_):
        time.sleep(0.1)
        ctypes.memmove(d, b"late", 4)
        return 0

    fn = KERNEL_FN(kernel)
    check(ac.acLaunchKernel(stream, fn, None))
    assert read_device(ac, d, 4) == b"late"
    check(ac.acStreamDestroy(stream))


def test_synchronous_copy_leaves_pending_kernel_errors_for_synchronize(ac, dev):
    stream = stream_create(ac)
    d = dev(4)
    fn = KERNEL_FN(lambda _: 1)
    check(ac.acLaunchKernel(stream, fn, None))
    read_device(ac, d, 4)  # waits for the kernel, does not consume its error
    assert ac.acStreamSynchronize(stream) == Err.LaunchFailure
    check(ac.acStreamDestroy(stream))


def test_large_copy_into_pageable_host_memory_is_exact_at_both_ends(ac, dev):
    # The copy engines advise huge pages over the 2 MiB-aligned interior of a
    # pageable destination (adviseHugePages): the bytes around it, which the
    # copy does not cover, must stay as they were.
    size = (9 << 20) + 77
    d = dev(size)
    data = pattern(size, 9)
    write_device(ac, d, data)
    host = ctypes.create_string_buffer(b"\xaa" * (size + 4096))
    check(ac.acMemcpy(ctypes.addressof(host) + 1000, d, size, D2H))
    raw = host.raw
    assert raw[:1000] == b"\xaa" * 1000
    assert raw[1000:1000 + size] == data
    assert raw[1000 + size:size + 4096] == b"\xaa" * (size + 4096 - 1000 - size)
