"""Fixtures for the libaccinte runtime tests (no torch involved).

`ac` is the library loaded through ctypes (see accinte_ctypes.py). Tests in
this process share one runtime, which may already be in use by other tests:
they set the current device they need and measure memory by differences.
Behaviour fixed at first use (environment variables, strict mode, fork) is
tested in fresh interpreters with accinte_ctypes.run_script.
"""

import ctypes
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import accinte_ctypes  # noqa: E402

# The in-process runtime gets the default device count and capacity, which
# the tests assume; ACCINTE_STRICT is left alone, so the whole suite can be
# run against a strict runtime.
for _name in ("ACCINTE_DEVICE_COUNT", "ACCINTE_DEVICE_MEMORY"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def ac():
    return accinte_ctypes.load()


@pytest.fixture(autouse=True)
def _restore_current_device(ac):
    """Each test starts on device 0 and leaves the main thread there."""
    accinte_ctypes.check(ac.acSetDevice(0))
    yield
    accinte_ctypes.check(ac.acSetDevice(0))


@pytest.fixture
def two_devices(ac):
    count = ctypes.c_int()
    accinte_ctypes.check(ac.acGetDeviceCount(ctypes.byref(count)))
    if count.value < 2:
        pytest.skip("needs two devices")


@pytest.fixture
def streams(ac):
    """Creates streams on the current device; destroys them afterwards."""
    created = []

    def make():
        created.append(accinte_ctypes.stream_create(ac))
        return created[-1]

    yield make
    for s in created:
        accinte_ctypes.check(ac.acStreamDestroy(s))
