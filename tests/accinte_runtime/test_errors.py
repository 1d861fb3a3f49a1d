"""Error names and strings, and that failures surface as specific codes."""

import ctypes

import pytest

from accinte_ctypes import Err, check, run_ok

NAMES = {code: "acError" + code.name if code else "acSuccess" for code in Err}


@pytest.mark.parametrize("code", list(Err), ids=lambda c: c.name)
def test_every_code_has_its_own_name(ac, code):
    assert ac.acGetErrorName(code).decode() == NAMES[code]


def test_every_code_has_a_distinct_description(ac):
    texts = [ac.acGetErrorString(code).decode() for code in Err]
    assert all(texts)
    assert len(set(texts)) == len(texts)
    assert "unrecognized error code" not in texts


def test_specific_descriptions(ac):
    assert ac.acGetErrorString(Err.Success) == b"no error"
    assert ac.acGetErrorString(Err.MemoryAllocation) == b"out of memory"
    assert ac.acGetErrorString(Err.InvalidDevice) == b"invalid device ordinal"
    assert ac.acGetErrorString(Err.NotReady) == b"device not ready"
    fork_text = ac.acGetErrorString(Err.InitializationError).decode()
    assert "forked child" in fork_text and "'spawn'" in fork_text


@pytest.mark.parametrize("code", [-1, 21, 998, 1000, 123456])
def test_unknown_codes_are_unrecognized(ac, code):
    assert ac.acGetErrorName(code) == b"unrecognized error code"
    assert ac.acGetErrorString(code) == b"unrecognized error code"


def test_check_names_the_error(ac):
    with pytest.raises(AssertionError, match="acErrorInvalidDevice"):
        check(ac.acSetDevice(-1))


def test_null_out_parameters_are_invalid_values(ac):
    assert ac.acGetDeviceCount(None) == Err.InvalidValue
    assert ac.acGetDevice(None) == Err.InvalidValue
    assert ac.acMalloc(None, 16) == Err.InvalidValue
    assert ac.acMallocHost(None, 16) == Err.InvalidValue
    assert ac.acMemGetInfo(None, None) == Err.InvalidValue
    assert ac.acStreamCreate(None) == Err.InvalidValue
    assert ac.acEventCreate(None) == Err.InvalidValue
    assert ac.acPointerGetAttributes(None, None) == Err.InvalidValue


def test_host_allocation_failure_is_out_of_memory(ac):
    # No system can back 2**62 bytes; the allocator's failure must come back
    # as a code, not as an exception or a crash.
    ptr = ctypes.c_void_p()
    assert ac.acMallocHost(ctypes.byref(ptr), 1 << 62) == Err.MemoryAllocation
    assert ptr.value is None


@pytest.mark.parametrize("strict", ["0", "1"])
def test_device_allocation_failure_within_capacity_is_out_of_memory(strict):
    # The capacity (8 EiB) admits the request, so the failure comes from the
    # system allocator itself; nothing is accounted for it.
    run_ok("""
        ptr = ctypes.c_void_p()
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert ac.acMalloc(ctypes.byref(ptr), 1 << 62) == Err.MemoryAllocation
        check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
        assert free.value == total.value == 1 << 63, (free, total)
    """, env={"ACCINTE_DEVICE_MEMORY": "8388608T", "ACCINTE_STRICT": strict})
