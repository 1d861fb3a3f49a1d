"""Devices: count, per-thread current device, properties, device sync."""

import ctypes
import os
import re
import threading
import time
from pathlib import Path

import pytest

from accinte_ctypes import DeviceProp, Err, Gate, check, run_ok, stream_create


def device_count(ac):
    count = ctypes.c_int()
    check(ac.acGetDeviceCount(ctypes.byref(count)))
    return count.value


def current_device(ac):
    device = ctypes.c_int()
    check(ac.acGetDevice(ctypes.byref(device)))
    return device.value


def test_default_device_count_is_two(ac):
    assert device_count(ac) == 2


# The limit is stated once, in the runtime's header; the runtime and the
# backend's per-device tables read it there.
MAX_DEVICE_COUNT = int(re.search(
    r"#define ACCINTE_MAX_DEVICE_COUNT (\d+)",
    (Path(__file__).parents[2] / "third_party/accinte/include/accinte/accinte.h").read_text(),
).group(1))


@pytest.mark.parametrize("value, expected", [
    ("1", 1), ("5", 5), (str(MAX_DEVICE_COUNT), MAX_DEVICE_COUNT),
    # Invalid values fall back to the default instead of failing.
    ("0", 2), ("-3", 2), (str(MAX_DEVICE_COUNT + 1), 2), ("abc", 2), ("3x", 2), ("", 2),
])
def test_device_count_from_environment(value, expected):
    out = run_ok("""
        count = ctypes.c_int()
        check(ac.acGetDeviceCount(ctypes.byref(count)))
        print(count.value)
    """, env={"ACCINTE_DEVICE_COUNT": value})
    assert int(out) == expected


def test_set_device_and_get_device(ac, two_devices):
    check(ac.acSetDevice(1))
    assert current_device(ac) == 1
    check(ac.acSetDevice(0))
    assert current_device(ac) == 0


@pytest.mark.parametrize("bad", [-1, 2, 64, 1 << 30])
def test_set_invalid_device_fails_and_keeps_the_current_one(ac, two_devices, bad):
    check(ac.acSetDevice(1))
    assert ac.acSetDevice(bad) == Err.InvalidDevice
    assert current_device(ac) == 1


def test_current_device_is_per_thread(ac, two_devices):
    check(ac.acSetDevice(1))
    seen = {}

    def worker():
        seen["initial"] = current_device(ac)  # a new thread starts on device 0
        check(ac.acSetDevice(1))
        check(ac.acSetDevice(0))
        seen["after"] = current_device(ac)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"initial": 0, "after": 0}
    assert current_device(ac) == 1  # untouched by the other thread


def test_properties(ac):
    prop = DeviceProp()
    check(ac.acGetDeviceProperties(ctypes.byref(prop), 0))
    assert prop.name == b"AccInte Emulated Device"
    assert prop.totalGlobalMem == 4 << 30
    assert (prop.major, prop.minor) == (1, 0)
    assert prop.multiProcessorCount == os.cpu_count()


def test_properties_of_invalid_device_and_null(ac):
    prop = DeviceProp()
    assert ac.acGetDeviceProperties(ctypes.byref(prop), device_count(ac)) == Err.InvalidDevice
    assert ac.acGetDeviceProperties(ctypes.byref(prop), -1) == Err.InvalidDevice
    assert ac.acGetDeviceProperties(None, 0) == Err.InvalidValue


@pytest.mark.parametrize("value, expected", [
    ("1048576", 1 << 20), ("512K", 512 << 10), ("3M", 3 << 20), ("2G", 2 << 30),
    ("1g", 1 << 30), ("1T", 1 << 40),
    # Invalid values fall back to the default 4G.
    ("lots", 4 << 30), ("0", 4 << 30), ("12Q", 4 << 30), ("1GB", 4 << 30), ("-5M", 4 << 30),
])
def test_device_memory_from_environment(value, expected):
    out = run_ok("""
        prop = DeviceProp()
        check(ac.acGetDeviceProperties(ctypes.byref(prop), 1))
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
        print(prop.totalGlobalMem, total.value)
    """, env={"ACCINTE_DEVICE_MEMORY": value})
    assert [int(v) for v in out.split()] == [expected, expected]


def test_stream_priority_range(ac):
    least, greatest = ctypes.c_int(7), ctypes.c_int(7)
    check(ac.acDeviceGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)))
    assert (least.value, greatest.value) == (0, -1)
    check(ac.acDeviceGetStreamPriorityRange(None, None))  # both optional


def test_device_synchronize_waits_for_every_stream_of_the_current_device(ac, two_devices):
    a, b = stream_create(ac), stream_create(ac)
    check(ac.acSetDevice(1))
    other = stream_create(ac)
    check(ac.acSetDevice(0))
    slow = [Gate(ac).launch(s) for s in (a, b, None)]
    elsewhere = Gate(ac).launch(other)
    # Released from another thread while acDeviceSynchronize blocks.
    timer = threading.Timer(0.2, lambda: [g.open() for g in slow])
    timer.start()
    begin = time.monotonic()
    check(ac.acDeviceSynchronize())
    assert time.monotonic() - begin >= 0.15
    assert all(g.finished.is_set() for g in slow)
    # Device 1's stream was not waited for: it is still held.
    assert ac.acStreamQuery(other) == Err.NotReady
    elsewhere.open()
    check(ac.acStreamSynchronize(other))
    timer.join()
    for s in (a, b, other):
        check(ac.acStreamDestroy(s))
