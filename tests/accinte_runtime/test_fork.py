"""fork(): a child of an initialized runtime is refused; an earlier one works.

Each test forks inside a fresh interpreter; the child reports through its exit
status (0 = all its checks passed) and always leaves with os._exit.
"""

from accinte_ctypes import run_ok

# Exercises the runtime end to end; exits the child with 0 when all is well.
CHILD_USES_THE_RUNTIME = """
def use_runtime():
    ptr = malloc(ac, 16)
    write_device(ac, ptr, b"works in a child")
    stream = stream_create(ac)
    out = ctypes.create_string_buffer(16)
    check(ac.acMemcpyAsync(out, ptr, 16, Kind.DeviceToHost, stream))
    check(ac.acStreamSynchronize(stream))
    assert out.raw == b"works in a child"
    check(ac.acStreamDestroy(stream))
    check(ac.acFree(ptr))

def fork_and_use():
    pid = os.fork()
    if pid == 0:
        try:
            use_runtime()
            os._exit(0)
        except BaseException as e:
            print("child:", repr(e), flush=True)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
"""


def test_child_forked_before_any_use_works():
    run_ok(CHILD_USES_THE_RUNTIME + """
assert fork_and_use() == 0
""")


def test_device_queries_do_not_initialize_the_runtime():
    # Counting and describing devices before forking is safe, as torch does
    # when it reports device_count() in a parent process.
    run_ok(CHILD_USES_THE_RUNTIME + """
count = ctypes.c_int()
check(ac.acGetDeviceCount(ctypes.byref(count)))
prop = DeviceProp()
check(ac.acGetDeviceProperties(ctypes.byref(prop), 0))
check(ac.acSetDevice(1))
check(ac.acSetDevice(0))
assert fork_and_use() == 0
""")


def test_child_of_an_initialized_runtime_is_refused():
    run_ok(CHILD_USES_THE_RUNTIME + """
ptr = malloc(ac, 16)                       # initializes the runtime
stream = stream_create(ac)
nothing = HOST_FN(lambda _: None)          # alive until the stream is synchronized
check(ac.acLaunchHostFunc(stream, nothing, None))
check(ac.acStreamSynchronize(stream))

pid = os.fork()
if pid == 0:
    codes = []
    count, out = ctypes.c_int(), ctypes.c_void_p()
    codes.append(ac.acGetDeviceCount(ctypes.byref(count)))
    codes.append(ac.acSetDevice(0))
    codes.append(ac.acMalloc(ctypes.byref(out), 16))
    codes.append(ac.acFree(ptr))
    codes.append(ac.acMemset(ptr, 0, 16))
    codes.append(ac.acStreamCreate(ctypes.byref(out)))
    codes.append(ac.acStreamSynchronize(stream))
    codes.append(ac.acDeviceSynchronize())
    codes.append(ac.acEventCreate(ctypes.byref(out)))
    message = ac.acGetErrorString(Err.InitializationError).decode()
    ok = (all(c == Err.InitializationError for c in codes)
          and "forked child" in message and "'spawn'" in message)
    if not ok:
        print("child codes:", codes, message, flush=True)
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0

# The parent is unaffected by the fork.
out = ctypes.create_string_buffer(4)
check(ac.acMemcpy(out, ptr, 4, Kind.DeviceToHost))
check(ac.acLaunchHostFunc(stream, nothing, None))
check(ac.acStreamSynchronize(stream))
check(ac.acStreamDestroy(stream))
check(ac.acFree(ptr))
""")


def test_pinned_allocation_also_initializes_the_runtime():
    run_ok("""
pinned = ctypes.c_void_p()
check(ac.acMallocHost(ctypes.byref(pinned), 16))
pid = os.fork()
if pid == 0:
    count = ctypes.c_int()
    os._exit(0 if ac.acGetDeviceCount(ctypes.byref(count)) == Err.InitializationError else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
""")
