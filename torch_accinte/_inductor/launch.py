"""What Inductor's generated wrappers call at run time for accinte.

Imported by the wrapper module's header (see ``codegen.AccInteWrapperMixin``);
keep it small and fast, it runs at every compiled call.
"""

from __future__ import annotations

import ctypes
from typing import Any

from torch_accinte import _C

__all__ = ["get_raw_stream", "launch_cpp_kernel"]

get_raw_stream = _C._get_current_raw_stream


# LITERALINCLUDE START: COMPILER LAUNCH CPP KERNEL
def launch_cpp_kernel(entry: Any, name: str, stream: int, *args: Any) -> None:
    """Queues compiled kernel ``name`` on the stream whose handle is ``stream``.

    ``entry`` is the kernel module's ``kernel`` entry point, loaded by
    ``async_compile.cpp`` (a ctypes function); ``args`` are the kernel's
    arguments in order (accinte tensors, ints, floats). Returns once queued.
    See Note [compiled kernels on accinte streams] in torch_accinte/csrc/Inductor.cpp.
    """
    address = ctypes.cast(entry, ctypes.c_void_p).value
    _C._launch_compiled_kernel(address, name, stream, args)
# LITERALINCLUDE END: COMPILER LAUNCH CPP KERNEL
