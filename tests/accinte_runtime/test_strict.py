"""Strict mode: device memory faults on host access outside access windows.

Every test runs in a fresh interpreter, since ACCINTE_STRICT is read once.
"""

import os
import signal
import subprocess
import sys

import pytest

from accinte_ctypes import HERE, library_path, run_ok, run_script

STRICT = {"ACCINTE_STRICT": "1"}

# Puts b"data" in device memory through the runtime, then reads it directly.
HOST_READ = """
    ptr = malloc(ac, 4096)
    write_device(ac, ptr, b"data")
    assert read_device(ac, ptr, 4) == b"data"
    print("copies work", flush=True)
    print(ctypes.string_at(ptr, 4), flush=True)
    print("host read worked", flush=True)
"""


@pytest.mark.parametrize("value, expected", [(None, 0), ("1", 1), ("0", 0), ("yes", 0)])
def test_is_strict_reflects_the_environment(value, expected):
    env = {} if value is None else {"ACCINTE_STRICT": value}
    assert run_ok("print(ac.acIsStrict())", env=env).strip() == str(expected)


def test_host_read_of_device_memory_faults():
    result = run_script(HOST_READ, env=STRICT)
    assert result.returncode == -signal.SIGSEGV, result.stderr
    assert "copies work" in result.stdout
    assert "host read worked" not in result.stdout


def test_host_read_of_device_memory_works_without_strict_mode():
    out = run_ok(HOST_READ)
    assert "b'data'" in out and "host read worked" in out


def test_kernels_may_touch_device_memory_and_it_is_protected_again_after():
    result = run_script("""
        ptr = malloc(ac, 64)
        write_device(ac, ptr, b"in")
        made = []

        def kernel(_):
            seen = ctypes.string_at(ptr, 2)
            ctypes.memmove(ptr, seen + b"->out", 7)
            # Allocated while the kernel runs: accessible within it too.
            fresh = ctypes.c_void_p()
            check(ac.acMalloc(ctypes.byref(fresh), 16))
            ctypes.memmove(fresh.value, b"fresh", 5)
            made.append(fresh.value)
            return 0

        fn = KERNEL_FN(kernel)
        check(ac.acLaunchKernel(None, fn, None))
        check(ac.acStreamSynchronize(None))
        assert read_device(ac, ptr, 7) == b"in->out"
        assert read_device(ac, made[0], 5) == b"fresh"
        print("kernel worked", flush=True)
        ctypes.string_at(made[0], 1)
        print("host read worked", flush=True)
    """, env=STRICT)
    assert result.returncode == -signal.SIGSEGV, result.stderr
    assert "kernel worked" in result.stdout
    assert "host read worked" not in result.stdout


def test_memset_and_pinned_memory_under_strict_mode():
    run_ok("""
        ptr = malloc(ac, 10)
        check(ac.acMemset(ptr, ord("s"), 10))
        pinned = ctypes.c_void_p()
        check(ac.acMallocHost(ctypes.byref(pinned), 10))
        check(ac.acMemcpy(pinned, ptr, 10, Kind.Default))
        assert ctypes.string_at(pinned.value, 10) == b"s" * 10  # pinned is host memory
        check(ac.acFreeHost(pinned))
        check(ac.acFree(ptr))
    """, env=STRICT)


def test_concurrent_windows_over_one_allocation_nest():
    # Copies on several threads and kernels on a stream open and close
    # windows over the same allocation in every interleaving. Were the
    # windows not counted, one closing would protect the memory under
    # another's copy and the process would fault.
    run_ok("""
        import threading
        ptr = malloc(ac, 1 << 16)
        payload = ctypes.create_string_buffer(b"x" * (1 << 16), 1 << 16)
        stream = stream_create(ac)
        kernel = KERNEL_FN(lambda _: ctypes.memset(ptr, 1, 1 << 16) and 0)

        sinks = []  # written by queued copies: alive until the stream is synchronized

        def copies(kind):
            sink = ctypes.create_string_buffer(1 << 16)
            sinks.append(sink)
            for _ in range(300):
                if kind == "in":
                    check(ac.acMemcpy(ptr, payload, 1 << 16, Kind.HostToDevice))
                else:
                    check(ac.acMemcpyAsync(sink, ptr, 1 << 16, Kind.DeviceToHost, stream))

        for _ in range(100):
            check(ac.acLaunchKernel(stream, kernel, None))
        threads = [threading.Thread(target=copies, args=(k,)) for k in ("in", "in", "out")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(ac.acStreamSynchronize(stream))
        check(ac.acStreamDestroy(stream))
        check(ac.acFree(ptr))
    """, env=STRICT, timeout=120)


def test_runtime_suites_pass_under_strict_mode():
    # The other suites never read device memory from the host directly, so
    # they must pass unchanged against a strict runtime; in strict mode freed
    # memory is unmapped, which also checks that queued copies keep it alive.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCINTE_")}
    env.update(ACCINTE_LIBRARY=str(library_path()), ACCINTE_STRICT="1")
    files = [str(HERE / f"test_{name}.py")
             for name in ("memory", "copy", "stream", "event", "graph")]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
