"""Memory: allocation, capacity accounting, pinned host memory, attributes."""

import ctypes
import threading
import time

import pytest

from accinte_ctypes import (Err, Gate, MemoryType, PointerAttributes, check, malloc,
                            read_device, run_ok, stream_create)


def mem_info(ac):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
    return free.value, total.value


def attributes(ac, ptr):
    attrs = PointerAttributes()
    check(ac.acPointerGetAttributes(ctypes.byref(attrs), ptr))
    return attrs


def malloc_host(ac, size):
    ptr = ctypes.c_void_p()
    check(ac.acMallocHost(ctypes.byref(ptr), size))
    return ptr.value


def test_malloc_is_aligned_and_accounted(ac):
    free_before, total = mem_info(ac)
    assert total == 4 << 30
    ptrs = [malloc(ac, size) for size in (1, 100, 4096, 12345)]
    assert all(p % 64 == 0 for p in ptrs)
    assert mem_info(ac)[0] == free_before - (1 + 100 + 4096 + 12345)
    for p in ptrs:
        check(ac.acFree(p))
    assert mem_info(ac)[0] == free_before


def test_malloc_of_zero_bytes_is_null(ac):
    ptr = ctypes.c_void_p(1234)
    check(ac.acMalloc(ctypes.byref(ptr), 0))
    assert ptr.value is None


def test_memory_is_accounted_per_device(ac, two_devices):
    free0 = mem_info(ac)[0]
    check(ac.acSetDevice(1))
    free1 = mem_info(ac)[0]
    ptr = malloc(ac, 1 << 20)
    assert mem_info(ac)[0] == free1 - (1 << 20)
    check(ac.acSetDevice(0))
    assert mem_info(ac)[0] == free0
    assert attributes(ac, ptr).device == 1
    check(ac.acFree(ptr))  # freed from device 0: the pointer knows its device
    check(ac.acSetDevice(1))
    assert mem_info(ac)[0] == free1


def test_capacity_is_enforced_without_allocating():
    run_ok("""
        def info():
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
            return free.value, total.value

        assert info() == (1 << 20, 1 << 20)
        big = malloc(ac, 1 << 20)                 # exactly the capacity
        ptr = ctypes.c_void_p(7)
        assert ac.acMalloc(ctypes.byref(ptr), 1) == Err.MemoryAllocation
        assert ptr.value == 7                     # untouched
        assert info() == (0, 1 << 20)             # nothing was allocated
        check(ac.acSetDevice(1))                  # device 1 has its own capacity
        other = malloc(ac, 1 << 20)
        check(ac.acFree(other))
        check(ac.acSetDevice(0))
        check(ac.acFree(big))
        assert info() == (1 << 20, 1 << 20)
        assert ac.acMalloc(ctypes.byref(ptr), (1 << 20) + 1) == Err.MemoryAllocation
        check(ac.acFree(malloc(ac, 1 << 20)))
    """, env={"ACCINTE_DEVICE_MEMORY": "1M"})


def test_free_of_unknown_pointers(ac):
    ptr = malloc(ac, 256)
    local = ctypes.create_string_buffer(16)
    assert ac.acFree(ctypes.addressof(local)) == Err.InvalidDevicePointer
    assert ac.acFree(ptr + 8) == Err.InvalidDevicePointer  # interior pointer
    check(ac.acFree(ptr))
    assert ac.acFree(ptr) == Err.InvalidDevicePointer  # double free
    check(ac.acFree(None))


def test_free_waits_for_the_devices_streams(ac):
    stream = stream_create(ac)
    ptr = malloc(ac, 64)
    gate = Gate(ac).launch(stream)
    timer = threading.Timer(0.2, gate.open)
    timer.start()
    begin = time.monotonic()
    check(ac.acFree(ptr))
    assert time.monotonic() - begin >= 0.15
    assert gate.finished.is_set()
    timer.join()
    check(ac.acStreamDestroy(stream))


def test_pinned_host_memory(ac):
    ptr = malloc_host(ac, 4096)
    ctypes.memset(ptr, 0x5A, 4096)  # ordinary host memory
    assert ctypes.string_at(ptr, 4) == b"ZZZZ"
    attrs = attributes(ac, ptr + 100)
    assert (attrs.type, attrs.device) == (MemoryType.Host, -1)
    assert (attrs.basePointer, attrs.size) == (ptr, 4096)
    # acFree and acFreeHost each refuse the other kind of memory.
    assert ac.acFree(ptr) == Err.InvalidDevicePointer
    dev = malloc(ac, 64)
    assert ac.acFreeHost(dev) == Err.InvalidHostPointer
    check(ac.acFree(dev))
    check(ac.acFreeHost(ptr))
    assert ac.acFreeHost(ptr) == Err.InvalidHostPointer
    local = ctypes.create_string_buffer(16)
    assert ac.acFreeHost(ctypes.addressof(local)) == Err.InvalidHostPointer
    check(ac.acFreeHost(None))


def test_pinned_memory_is_not_device_capacity(ac):
    before = mem_info(ac)[0]
    ptr = malloc_host(ac, 1 << 20)
    assert mem_info(ac)[0] == before
    check(ac.acFreeHost(ptr))


def test_pointer_attributes_of_device_memory(ac, two_devices):
    check(ac.acSetDevice(1))
    ptr = malloc(ac, 1000)
    check(ac.acSetDevice(0))
    for inside in (ptr, ptr + 1, ptr + 999):
        attrs = attributes(ac, inside)
        assert attrs.type == MemoryType.Device
        assert attrs.device == 1
        assert attrs.devicePointer == inside
        assert (attrs.basePointer, attrs.size) == (ptr, 1000)
    check(ac.acFree(ptr))
    assert attributes(ac, ptr).type == MemoryType.Unregistered


@pytest.mark.parametrize("where", ["python buffer", "null"])
def test_pointer_attributes_of_unknown_memory(ac, where):
    local = ctypes.create_string_buffer(64)
    ptr = ctypes.addressof(local) if where == "python buffer" else None
    attrs = attributes(ac, ptr)  # success, as in CUDA 11+
    assert (attrs.type, attrs.device) == (MemoryType.Unregistered, -1)
    assert (attrs.basePointer, attrs.size) == (None, 0)


def test_concurrent_allocation_from_many_threads(ac):
    before = mem_info(ac)[0]
    errors = []

    def churn(seed):
        try:
            for i in range(200):
                size = 64 + (seed * 7919 + i * 104729) % 8192
                ptr = malloc(ac, size)
                assert attributes(ac, ptr + size - 1).basePointer == ptr
                check(ac.acFree(ptr))
        except AssertionError as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert mem_info(ac)[0] == before


def test_freed_memory_stays_valid_for_queued_copies(ac, two_devices):
    # A copy queued on device 1 reads device 0 memory; acFree on device 0
    # does not wait for device 1, so the copy must keep the memory alive.
    src = malloc(ac, 4)
    check(ac.acMemset(src, 0x42, 4))
    check(ac.acSetDevice(1))
    stream = stream_create(ac)
    dst = malloc(ac, 4)
    gate = Gate(ac).launch(stream)
    check(ac.acMemcpyAsync(dst, src, 4, 3, stream))
    check(ac.acSetDevice(0))
    check(ac.acFree(src))  # returns at once: device 0 is idle
    assert ac.acStreamQuery(stream) == Err.NotReady
    gate.open()
    check(ac.acStreamSynchronize(stream))
    assert read_device(ac, dst, 4) == b"BBBB"
    check(ac.acFree(dst))
    check(ac.acStreamDestroy(stream))
