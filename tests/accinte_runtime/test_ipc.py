"""Inter-process sharing of device memory (acIpc*): handles, mapping the same
memory in the same or another process, lifetime beyond the exporter's free
and exit, stale and corrupt handles, the descriptor budget, strict mode."""

import ctypes
import os
import signal
import subprocess
import sys
import textwrap

from accinte_ctypes import (_PRELUDE, Err, IpcMemHandle, IPC_LAZY_ENABLE_PEER_ACCESS,
                            PointerAttributes, check, library_path, malloc, read_device,
                            run_ok, run_script, write_device)


def get_handle(ac, ptr):
    handle = IpcMemHandle()
    check(ac.acIpcGetMemHandle(ctypes.byref(handle), ptr))
    return handle


def open_handle(ac, handle, flags=0):
    ptr = ctypes.c_void_p()
    check(ac.acIpcOpenMemHandle(ctypes.byref(ptr), handle, flags))
    return ptr.value


def mem_free(ac):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(ac.acMemGetInfo(ctypes.byref(free), ctypes.byref(total)))
    return free.value


def test_handle_names_the_whole_allocation(ac):
    ptr = malloc(ac, 1000)
    assert bytes(get_handle(ac, ptr + 100)) == bytes(get_handle(ac, ptr))
    opened = open_handle(ac, get_handle(ac, ptr + 100))  # the base comes back
    write_device(ac, ptr + 100, b"x")
    assert read_device(ac, opened + 100, 1) == b"x"
    check(ac.acIpcCloseMemHandle(opened))
    check(ac.acFree(ptr))


def test_opening_in_the_same_process_maps_the_same_memory(ac):
    ptr = malloc(ac, 4096)
    write_device(ac, ptr, b"from the exporter")
    free_before = mem_free(ac)
    opened = open_handle(ac, get_handle(ac, ptr), IPC_LAZY_ENABLE_PEER_ACCESS)
    assert opened != ptr
    assert mem_free(ac) == free_before  # not counted twice
    assert read_device(ac, opened, 17) == b"from the exporter"
    write_device(ac, opened, b"from the importer")
    assert read_device(ac, ptr, 17) == b"from the importer"
    attrs = PointerAttributes()
    check(ac.acPointerGetAttributes(ctypes.byref(attrs), opened + 10))
    assert (attrs.type, attrs.device, attrs.basePointer, attrs.size) == (2, 0, opened, 4096)
    check(ac.acIpcCloseMemHandle(opened))
    assert read_device(ac, ptr, 17) == b"from the importer"
    check(ac.acFree(ptr))


def test_imported_memory_belongs_to_the_exporting_device(ac, two_devices):
    check(ac.acSetDevice(1))
    ptr = malloc(ac, 64)
    check(ac.acSetDevice(0))
    opened = open_handle(ac, get_handle(ac, ptr))
    attrs = PointerAttributes()
    check(ac.acPointerGetAttributes(ctypes.byref(attrs), opened))
    assert attrs.device == 1
    check(ac.acIpcCloseMemHandle(opened))
    check(ac.acFree(ptr))


def test_imported_memory_can_be_exported_again(ac):
    ptr = malloc(ac, 64)
    first = open_handle(ac, get_handle(ac, ptr))
    second = open_handle(ac, get_handle(ac, first))
    write_device(ac, second, b"chain")
    assert read_device(ac, ptr, 5) == b"chain"
    for p in (second, first):
        check(ac.acIpcCloseMemHandle(p))
    check(ac.acFree(ptr))


def test_release_calls_are_not_interchangeable(ac):
    ptr = malloc(ac, 64)
    opened = open_handle(ac, get_handle(ac, ptr))
    assert ac.acFree(opened) == Err.InvalidDevicePointer
    assert ac.acIpcCloseMemHandle(ptr) == Err.InvalidDevicePointer
    assert ac.acIpcCloseMemHandle(opened + 8) == Err.InvalidDevicePointer
    check(ac.acIpcCloseMemHandle(opened))
    assert ac.acIpcCloseMemHandle(opened) == Err.InvalidDevicePointer
    check(ac.acFree(ptr))


def test_invalid_arguments(ac):
    ptr = malloc(ac, 64)
    handle = get_handle(ac, ptr)
    out = ctypes.c_void_p()
    assert ac.acIpcGetMemHandle(None, ptr) == Err.InvalidValue
    host = ctypes.create_string_buffer(8)
    assert ac.acIpcGetMemHandle(ctypes.byref(IpcMemHandle()), host) == \
        Err.InvalidDevicePointer
    assert ac.acIpcOpenMemHandle(None, handle, 0) == Err.InvalidValue
    assert ac.acIpcOpenMemHandle(ctypes.byref(out), handle, 0x4) == Err.InvalidValue
    assert ac.acIpcOpenMemHandle(ctypes.byref(out), IpcMemHandle(), 0) == \
        Err.MapBufferObjectFailed
    check(ac.acFree(ptr))


def test_a_handle_goes_stale_when_the_exporter_frees(ac):
    ptr = malloc(ac, 64)
    handle = get_handle(ac, ptr)
    check(ac.acFree(ptr))
    out = ctypes.c_void_p()
    assert ac.acIpcOpenMemHandle(ctypes.byref(out), handle, 0) == Err.MapBufferObjectFailed
    # The descriptor number is likely reused by the next allocation: the name
    # check must still refuse the old handle.
    other = malloc(ac, 64)
    assert ac.acIpcOpenMemHandle(ctypes.byref(out), handle, 0) == Err.MapBufferObjectFailed
    check(ac.acFree(other))


def test_another_process_sees_and_writes_the_same_memory(ac):
    ptr = malloc(ac, 256)
    write_device(ac, ptr, b"parent wrote this")
    handle = bytes(get_handle(ac, ptr)).hex()
    out = run_ok(f"""
        handle = IpcMemHandle.from_buffer_copy(bytes.fromhex("{handle}"))
        ptr = ctypes.c_void_p()
        check(ac.acIpcOpenMemHandle(ctypes.byref(ptr), handle, 0))
        print(read_device(ac, ptr.value, 17).decode())
        write_device(ac, ptr.value + 100, b"child wrote this")
        check(ac.acIpcCloseMemHandle(ptr.value))
    """)
    assert out.strip() == "parent wrote this"
    assert read_device(ac, ptr + 100, 16) == b"child wrote this"
    check(ac.acFree(ptr))


def test_imported_memory_outlives_the_exporters_free_and_exit(ac):
    # The child exports, the parent opens, then the child frees and exits.
    child = subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent("""
            ptr = malloc(ac, 8192)
            write_device(ac, ptr + 4096, b"still here")
            handle = IpcMemHandle()
            check(ac.acIpcGetMemHandle(ctypes.byref(handle), ptr))
            print(bytes(handle).hex(), flush=True)
            sys.stdin.readline()
            check(ac.acFree(ptr))
        """)],
        env={"ACCINTE_LIBRARY": str(library_path()), "PATH": "/usr/bin:/bin",
             # an instrumented library needs its sanitizer runtime (make sanitize)
             **{k: v for k, v in os.environ.items()
                if k == "LD_PRELOAD" or k.startswith(("ASAN_", "UBSAN_"))}},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        handle = IpcMemHandle.from_buffer_copy(bytes.fromhex(child.stdout.readline().strip()))
        opened = open_handle(ac, handle)
        child.stdin.write("opened\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
    assert read_device(ac, opened + 4096, 10) == b"still here"
    write_device(ac, opened, b"writable")
    assert read_device(ac, opened, 8) == b"writable"
    check(ac.acIpcCloseMemHandle(opened))


def test_descriptor_budget_leaves_half_the_limit_free():
    out = run_ok("""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        ptrs = [malloc(ac, 16) for _ in range(40)]
        handle = IpcMemHandle()
        codes = [ac.acIpcGetMemHandle(ctypes.byref(handle), p) for p in ptrs]
        print(codes.count(0), codes.count(11))
        write_device(ac, ptrs[-1], b"private")  # unshareable memory still works
        assert read_device(ac, ptrs[-1], 7) == b"private"
        check(ac.acFree(ptrs[0]))
        print(ac.acIpcGetMemHandle(ctypes.byref(handle), malloc(ac, 16)))
    """)
    assert out.split() == ["32", "8", "0"]


def test_strict_mode_protects_the_importers_mapping_too():
    result = run_script("""
        ptr = malloc(ac, 4096)
        handle = IpcMemHandle()
        check(ac.acIpcGetMemHandle(ctypes.byref(handle), ptr))
        opened = ctypes.c_void_p()
        check(ac.acIpcOpenMemHandle(ctypes.byref(opened), handle, 0))
        write_device(ac, opened.value, b"data")
        assert read_device(ac, ptr, 4) == b"data"
        print("copies work", flush=True)
        print(ctypes.string_at(opened.value, 4), flush=True)
        print("host read worked", flush=True)
    """, env={"ACCINTE_STRICT": "1"})
    assert result.returncode == -signal.SIGSEGV, result.stderr
    assert "copies work" in result.stdout
    assert "host read worked" not in result.stdout
