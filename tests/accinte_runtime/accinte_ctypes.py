"""ctypes bindings for libaccinte, for tests that exercise the runtime alone.

Nothing here imports torch: the runtime is a plain C library. The library is
found through $ACCINTE_LIBRARY, else at <repo>/torch_accinte/lib/libaccinte.so
where the package build puts it.

Also used by the scripts that tests run in a fresh interpreter (`run_script`),
for behaviour fixed at first use: environment variables and fork.
"""

import ctypes
import enum
import os
import subprocess
import sys
import textwrap
import threading
import time
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


class Err(enum.IntEnum):
    """acError_t."""

    Success = 0
    InvalidValue = 1
    MemoryAllocation = 2
    InitializationError = 3
    InvalidDevice = 4
    InvalidDevicePointer = 5
    InvalidMemcpyDirection = 6
    InvalidResourceHandle = 7
    NotReady = 8
    LaunchFailure = 9
    InvalidHostPointer = 10
    NotSupported = 11
    MapBufferObjectFailed = 12
    StreamCaptureUnsupported = 13
    StreamCaptureInvalidated = 14
    StreamCaptureUnmatched = 15
    StreamCaptureIsolation = 16
    StreamCaptureWrongThread = 17
    IllegalState = 18
    StreamCaptureUnjoined = 19
    IpcDescriptorsExhausted = 20
    Unknown = 999


class Kind(enum.IntEnum):
    """acMemcpyKind."""

    HostToHost = 0
    HostToDevice = 1
    DeviceToHost = 2
    DeviceToDevice = 3
    Default = 4


class MemoryType(enum.IntEnum):
    """acMemoryType."""

    Unregistered = 0
    Host = 1
    Device = 2


class CaptureMode(enum.IntEnum):
    """acStreamCaptureMode."""

    Global = 0
    ThreadLocal = 1
    Relaxed = 2


class CaptureStatus(enum.IntEnum):
    """acStreamCaptureStatus."""

    NoCapture = 0  # acStreamCaptureStatusNone
    Active = 1
    Invalidated = 2


GRAPH_USER_OBJECT_MOVE = 0x1
USER_OBJECT_NO_DESTRUCTOR_SYNC = 0x1

EVENT_DEFAULT = 0x0
EVENT_DISABLE_TIMING = 0x2
EVENT_INTERPROCESS = 0x4


class DeviceProp(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("totalGlobalMem", c_size_t),
        ("major", c_int),
        ("minor", c_int),
        ("multiProcessorCount", c_int),
    ]


class PointerAttributes(ctypes.Structure):
    _fields_ = [
        ("type", c_int),
        ("device", c_int),
        ("devicePointer", c_void_p),
        ("basePointer", c_void_p),
        ("size", c_size_t),
    ]


class IpcMemHandle(ctypes.Structure):
    """acIpcMemHandle_t: 64 opaque bytes, passed by value to acIpcOpenMemHandle."""

    _fields_ = [("reserved", ctypes.c_char * 64)]


IPC_LAZY_ENABLE_PEER_ACCESS = 0x1


class IpcEventHandle(ctypes.Structure):
    """acIpcEventHandle_t: 64 opaque bytes, passed by value to acIpcOpenEventHandle."""

    _fields_ = [("reserved", ctypes.c_char * 64)]


class ActivityKind(enum.IntEnum):
    """acActivityKind."""

    Kernel = 1
    Memcpy = 2
    Memset = 3
    Runtime = 4
    Synchronization = 5
    ExternalCorrelation = 6


class ActivityRecord(ctypes.Structure):
    """acActivityRecord."""

    _fields_ = [
        ("kind", c_int),
        ("device", c_int),
        ("stream", c_void_p),
        ("start", ctypes.c_uint64),
        ("end", ctypes.c_uint64),
        ("correlationId", ctypes.c_uint64),
        ("externalId", ctypes.c_uint64),
        ("bytes", ctypes.c_uint64),
        ("copyKind", c_int),
        ("threadId", ctypes.c_uint32),
        ("name", c_char_p),
    ]

HOST_FN = ctypes.CFUNCTYPE(None, c_void_p)
KERNEL_FN = ctypes.CFUNCTYPE(c_int, c_void_p)

_E = c_int  # acError_t
_P = c_void_p  # pointers, acStream_t, acEvent_t
_SIGNATURES = {
    "acGetErrorString": (c_char_p, [_E]),
    "acGetErrorName": (c_char_p, [_E]),
    "acGetDeviceCount": (_E, [POINTER(c_int)]),
    "acSetDevice": (_E, [c_int]),
    "acGetDevice": (_E, [POINTER(c_int)]),
    "acGetDeviceProperties": (_E, [POINTER(DeviceProp), c_int]),
    "acDeviceSynchronize": (_E, []),
    "acMemGetInfo": (_E, [POINTER(c_size_t), POINTER(c_size_t)]),
    "acDeviceGetStreamPriorityRange": (_E, [POINTER(c_int), POINTER(c_int)]),
    "acMalloc": (_E, [POINTER(c_void_p), c_size_t]),
    "acFree": (_E, [_P]),
    "acMallocHost": (_E, [POINTER(c_void_p), c_size_t]),
    "acFreeHost": (_E, [_P]),
    "acPointerGetAttributes": (_E, [POINTER(PointerAttributes), _P]),
    "acMemGetAllocationGranularity": (_E, [POINTER(c_size_t)]),
    "acMemAddressReserve": (_E, [POINTER(c_void_p), c_size_t]),
    "acMemAddressFree": (_E, [_P, c_size_t]),
    "acMemCreate": (_E, [POINTER(ctypes.c_ulonglong), c_size_t]),
    "acMemRelease": (_E, [ctypes.c_ulonglong]),
    "acMemMap": (_E, [_P, c_size_t, ctypes.c_ulonglong]),
    "acMemUnmap": (_E, [_P, c_size_t]),
    "acMemcpy": (_E, [_P, _P, c_size_t, c_int]),
    "acMemcpyAsync": (_E, [_P, _P, c_size_t, c_int, _P]),
    "acMemset": (_E, [_P, c_int, c_size_t]),
    "acMemsetAsync": (_E, [_P, c_int, c_size_t, _P]),
    "acStreamCreate": (_E, [POINTER(c_void_p)]),
    "acStreamCreateWithPriority": (_E, [POINTER(c_void_p), c_uint, c_int]),
    "acStreamDestroy": (_E, [_P]),
    "acStreamQuery": (_E, [_P]),
    "acStreamSynchronize": (_E, [_P]),
    "acStreamWaitEvent": (_E, [_P, _P, c_uint]),
    "acStreamGetPriority": (_E, [_P, POINTER(c_int)]),
    "acStreamGetDevice": (_E, [_P, POINTER(c_int)]),
    "acDeviceGetDefaultStream": (_E, [c_int, POINTER(c_void_p)]),
    "acLaunchHostFunc": (_E, [_P, HOST_FN, _P]),
    "acLaunchKernel": (_E, [_P, KERNEL_FN, _P]),
    "acEventCreate": (_E, [POINTER(c_void_p)]),
    "acEventCreateWithFlags": (_E, [POINTER(c_void_p), c_uint]),
    "acEventDestroy": (_E, [_P]),
    "acEventRecord": (_E, [_P, _P]),
    "acEventQuery": (_E, [_P]),
    "acEventSynchronize": (_E, [_P]),
    "acEventElapsedTime": (_E, [POINTER(c_float), _P, _P]),
    "acIsStrict": (c_int, []),
    "acCapturesUnderway": (c_uint, []),
    "acIpcGetMemHandle": (_E, [POINTER(IpcMemHandle), _P]),
    "acIpcOpenMemHandle": (_E, [POINTER(c_void_p), IpcMemHandle, c_uint]),
    "acIpcCloseMemHandle": (_E, [_P]),
    "acIpcGetEventHandle": (_E, [POINTER(IpcEventHandle), _P]),
    "acIpcOpenEventHandle": (_E, [POINTER(c_void_p), IpcEventHandle]),
    "acStreamBeginCapture": (_E, [_P, c_int]),
    "acStreamEndCapture": (_E, [_P, POINTER(c_void_p)]),
    "acStreamIsCapturing": (_E, [_P, POINTER(c_int)]),
    "acStreamGetCaptureInfo": (_E, [_P, POINTER(c_int), POINTER(ctypes.c_ulonglong),
                                    POINTER(c_void_p)]),
    "acGraphInstantiate": (_E, [POINTER(c_void_p), _P, ctypes.c_ulonglong]),
    "acGraphLaunch": (_E, [_P, _P]),
    "acGraphGetNodes": (_E, [_P, _P, POINTER(c_size_t)]),
    "acGraphDestroy": (_E, [_P]),
    "acGraphExecDestroy": (_E, [_P]),
    "acUserObjectCreate": (_E, [POINTER(c_void_p), _P, HOST_FN, c_uint, c_uint]),
    "acUserObjectRelease": (_E, [_P, c_uint]),
    "acGraphRetainUserObject": (_E, [_P, _P, c_uint, c_uint]),
    "acActivityEnable": (_E, [c_int]),
    "acActivityDisable": (_E, [c_int]),
    "acActivityPushExternalCorrelationId": (_E, [ctypes.c_uint64]),
    "acActivityPopExternalCorrelationId": (_E, [POINTER(ctypes.c_uint64)]),
    "acActivityFlushAll": (_E, []),
    "acActivityGetRecords": (_E, [POINTER(ActivityRecord), c_size_t, POINTER(c_size_t)]),
    "acActivityClear": (_E, []),
    "acActivityGetTimestamp": (_E, [POINTER(ctypes.c_uint64)]),
    "acLaunchKernelNamed": (_E, [_P, KERNEL_FN, _P, c_char_p]),
}

_lib = None


def library_path():
    explicit = os.environ.get("ACCINTE_LIBRARY")
    return Path(explicit) if explicit else REPO / "torch_accinte" / "lib" / "libaccinte.so"


def load():
    """The library, with restype/argtypes set for every call (loaded once)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not path.exists():
            raise FileNotFoundError(
                f"{path} not found: build the package, or point ACCINTE_LIBRARY at a "
                "libaccinte.so built from third_party/accinte")
        lib = ctypes.CDLL(str(path))  # CDLL: calls release the GIL
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = lib
    return _lib


def error_name(code):
    return load().acGetErrorName(code).decode()


def check(code):
    """Asserts that a call succeeded, naming the error if it did not."""
    assert code == Err.Success, f"{error_name(code)} ({code}): " + \
        load().acGetErrorString(code).decode()


# ---- small conveniences -------------------------------------------------------


def malloc(ac, size):
    ptr = c_void_p()
    check(ac.acMalloc(ctypes.byref(ptr), size))
    return ptr.value


def stream_create(ac, priority=None):
    stream = c_void_p()
    if priority is None:
        check(ac.acStreamCreate(ctypes.byref(stream)))
    else:
        check(ac.acStreamCreateWithPriority(ctypes.byref(stream), 0, priority))
    return stream.value


def event_create(ac, flags=EVENT_DEFAULT):
    event = c_void_p()
    check(ac.acEventCreateWithFlags(ctypes.byref(event), flags))
    return event.value


def write_device(ac, dst, data):
    buf = ctypes.create_string_buffer(bytes(data), len(data))
    check(ac.acMemcpy(dst, buf, len(data), Kind.HostToDevice))


def read_device(ac, src, size):
    buf = ctypes.create_string_buffer(size)
    check(ac.acMemcpy(buf, src, size, Kind.DeviceToHost))
    return buf.raw


def activity_records(ac):
    """Every stored activity record (flushed first), as ActivityRecord copies."""
    check(ac.acActivityFlushAll())
    result = []
    buf = (ActivityRecord * 256)()
    count = c_size_t()
    while True:
        check(ac.acActivityGetRecords(buf, len(buf), ctypes.byref(count)))
        result.extend(ActivityRecord.from_buffer_copy(buf[i]) for i in range(count.value))
        if count.value < len(buf):
            return result


class Gate:
    """Host work that holds a stream busy until released.

    `launch(stream)` queues a host function that sets `started` then blocks
    until `open()` (or a 10 s safety timeout, so a broken runtime fails the
    test instead of hanging it). The ctypes callback is kept alive here.
    """

    def __init__(self, ac):
        self.ac = ac
        self.started = threading.Event()
        self.released = threading.Event()
        self.finished = threading.Event()

        def body(_):
            self.started.set()
            self.released.wait(10)
            self.finished.set()

        self.fn = HOST_FN(body)

    def launch(self, stream):
        check(self.ac.acLaunchHostFunc(stream, self.fn, None))
        return self

    def open(self):
        self.released.set()


class Recorder:
    """Host functions that append a tag to `order` when they run."""

    def __init__(self, ac):
        self.ac = ac
        self.order = []
        self._callbacks = []  # kept alive until the test ends

    def launch(self, stream, tag, delay=0.0):
        def body(_):
            if delay:
                time.sleep(delay)
            self.order.append(tag)

        fn = HOST_FN(body)
        self._callbacks.append(fn)
        check(self.ac.acLaunchHostFunc(stream, fn, None))


# ---- fresh interpreters ----------------------------------------------------------

_PRELUDE = f"""\
import ctypes, os, sys
sys.path.insert(0, {str(HERE)!r})
from accinte_ctypes import *
ac = load()
"""


def run_script(body, env=None, timeout=60):
    """Runs `body` in a new Python process with this module imported as `*`
    and the library loaded as `ac`. The child sees no ACCINTE_* variable of
    ours except the library path, plus `env`. Returns the CompletedProcess."""
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith("ACCINTE_") and k != "PYTHONFAULTHANDLER"}
    child_env["ACCINTE_LIBRARY"] = str(library_path())
    child_env.update(env or {})
    return subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)],
                          env=child_env, capture_output=True, text=True, timeout=timeout)


def run_ok(body, env=None, timeout=60):
    """run_script, asserting a clean exit; returns stdout."""
    result = run_script(body, env, timeout)
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result.stdout
