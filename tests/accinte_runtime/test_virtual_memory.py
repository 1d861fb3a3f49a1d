"""Virtual memory (acMemAddressReserve, acMemCreate, acMemMap and their
inverses; Note [accinte virtual memory]): capacity taken by physical memory,
mapped memory usable by copies as device memory, a range grown in place,
and every misuse refused with an error code."""

import ctypes

from accinte_ctypes import Err, MemoryType, PointerAttributes, check, read_device, write_device

MiB = 1 << 20


def free_bytes(ac):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
    return free.value


def reserve(ac, size):
    ptr = ctypes.c_void_p()
    check(ac.acMemAddressReserve(ctypes.byref(ptr), size))
    return ptr.value


def create(ac, size):
    handle = ctypes.c_ulonglong()
    check(ac.acMemCreate(ctypes.byref(handle), size))
    return handle.value


def test_granularity_is_two_mebibytes(ac):
    granularity = ctypes.c_size_t()
    check(ac.acMemGetAllocationGranularity(ctypes.byref(granularity)))
    assert granularity.value == 2 * MiB


def test_a_range_grows_in_place_and_keeps_its_contents(ac):
    free_before = free_bytes(ac)
    base = reserve(ac, 64 * MiB)
    assert free_bytes(ac) == free_before  # address space costs no capacity
    first, second = create(ac, 2 * MiB), create(ac, 4 * MiB)
    assert free_bytes(ac) == free_before - 6 * MiB
    check(ac.acMemMap(base, 2 * MiB, first))
    check(ac.acMemMap(base + 2 * MiB, 4 * MiB, second))
    # One copy across both mappings: the range is device memory, contiguous.
    data = bytes(range(256)) * (16 * 1024)  # 4 MiB
    write_device(ac, base + MiB, data)
    assert read_device(ac, base + MiB, len(data)) == data
    attrs = PointerAttributes()
    check(ac.acPointerGetAttributes(ctypes.byref(attrs), ctypes.c_void_p(base + 3 * MiB)))
    assert attrs.type == MemoryType.Device and attrs.basePointer == base
    check(ac.acMemUnmap(base + 2 * MiB, 4 * MiB))
    check(ac.acMemRelease(second))
    assert free_bytes(ac) == free_before - 2 * MiB
    assert read_device(ac, base + MiB, MiB) == data[:MiB]  # the first mapping is untouched
    check(ac.acMemUnmap(base, 2 * MiB))
    check(ac.acMemRelease(first))
    check(ac.acMemAddressFree(base, 64 * MiB))
    assert free_bytes(ac) == free_before


def test_a_released_handle_keeps_its_capacity_until_unmapped(ac):
    free_before = free_bytes(ac)
    base = reserve(ac, 2 * MiB)
    handle = create(ac, 2 * MiB)
    check(ac.acMemMap(base, 2 * MiB, handle))
    check(ac.acMemRelease(handle))
    assert free_bytes(ac) == free_before - 2 * MiB
    check(ac.acMemUnmap(base, 2 * MiB))
    assert free_bytes(ac) == free_before
    check(ac.acMemAddressFree(base, 2 * MiB))


def test_misuse_is_refused(ac):
    base = reserve(ac, 8 * MiB)
    handle = create(ac, 2 * MiB)
    size = ctypes.c_void_p()
    assert ac.acMemAddressReserve(ctypes.byref(size), MiB) == Err.InvalidValue  # not granular
    assert ac.acMemCreate(ctypes.byref(ctypes.c_ulonglong()), 3 * MiB) == Err.InvalidValue
    too_much = ctypes.c_ulonglong()
    assert ac.acMemCreate(ctypes.byref(too_much), 64 << 30) == Err.MemoryAllocation
    assert ac.acMemMap(base, 4 * MiB, handle) == Err.InvalidValue   # size is not the handle's
    assert ac.acMemMap(base + 7 * MiB, 2 * MiB, handle) == Err.InvalidValue  # past the range
    assert ac.acMemMap(base + MiB, 2 * MiB, handle) == Err.InvalidValue  # not granular
    check(ac.acMemMap(base, 2 * MiB, handle))
    assert ac.acMemMap(base + 2 * MiB, 2 * MiB, handle) == Err.InvalidValue  # mapped already
    other = create(ac, 2 * MiB)
    assert ac.acMemMap(base, 2 * MiB, other) == Err.InvalidValue  # something is mapped there
    assert ac.acMemAddressFree(base, 8 * MiB) == Err.InvalidValue  # still mapped
    assert ac.acFree(base) == Err.InvalidDevicePointer  # not acMalloc memory
    assert ac.acMemUnmap(base, 4 * MiB) == Err.InvalidValue  # not whole mappings
    check(ac.acMemUnmap(base, 2 * MiB))
    for h in (handle, other):
        check(ac.acMemRelease(h))
    assert ac.acMemRelease(handle) == Err.InvalidValue  # released twice
    check(ac.acMemAddressFree(base, 8 * MiB))
