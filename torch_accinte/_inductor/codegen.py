"""Inductor code generation for accinte: C++ kernels launched on accinte streams.

Inductor's C++ (CPU) code generator writes the kernels, since accinte memory is
host memory the runtime lets its stream workers touch. Three classes change
where they run:

- ``AccInteScheduling`` (a ``CppScheduling``) compiles each kernel together
  with an entry point of one fixed signature and loads it with
  ``async_compile.cpp``, instead of binding it as a Python function that
  would run on the host;
- ``AccInteWrapperCodegen`` (a ``PythonWrapperCodegen``) calls
  ``launch_cpp_kernel(kernel, name, stream, *args)`` with the current raw
  stream, so every kernel is queued on the current accinte stream;
- ``AccInteDeviceOpOverrides`` tells the wrapper how to import
  ``get_raw_stream`` and how to synchronise, guard or select the device.

See Note [compiled kernels on accinte streams] in torch_accinte/csrc/Inductor.cpp.
"""

from __future__ import annotations

from typing import Any

from torch._inductor import config
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.cpp import CppScheduling, get_export_declaration
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.utils import Placeholder, get_fused_kernel_name
from torch._inductor.virtualized import V

__all__ = [
    "AccInteCppWrapperCodegen", "AccInteDeviceOpOverrides", "AccInteScheduling",
    "AccInteWrapperCodegen", "entry_point_source",
]

_LAUNCH_IMPORT = "from torch_accinte._inductor.launch import launch_cpp_kernel"


# LITERALINCLUDE START: COMPILER OP OVERRIDES
class AccInteDeviceOpOverrides(DeviceOpOverrides):
    """Source snippets the Python wrapper writes for accinte."""

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_accinte._inductor.launch import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.accinte.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.accinte.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.accinte.device({device_idx})"

    def current_stream(self) -> str:
        return "torch.accinte.current_stream()"
# LITERALINCLUDE END: COMPILER OP OVERRIDES


# LITERALINCLUDE START: COMPILER ENTRY POINT
def entry_point_source(arg_types: list[str]) -> str:
    """C++ of ``extern "C" int kernel(const int64_t* args, char* error, size_t size)``.

    It calls ``kernel_body`` (the kernel Inductor wrote) with ``args[i]`` cast
    back to ``arg_types[i]``: pointers from addresses, integers as they are,
    floating-point values from their bit patterns. An exception (Inductor's
    integer division by zero is a ``c10::Error`` saying ``ZeroDivisionError``)
    becomes its first line in ``error`` and a return value of 1: exceptions do
    not cross the C boundary into the runtime. The module is not linked with
    c10, so it catches ``std::exception``, not ``c10::Error``.
    """
    casts = []
    for i, arg_type in enumerate(arg_types):
        if arg_type.endswith("*"):
            casts.append(f"reinterpret_cast<{arg_type}>(args[{i}])")
        elif "double" in arg_type or "float" in arg_type:
            casts.append(f"static_cast<{arg_type}>(accinte_word_to_double(args[{i}]))")
        else:
            casts.append(f"static_cast<{arg_type}>(args[{i}])")
    call = ", ".join(casts)
    return f"""
#include <cstdio>
#include <cstring>
static double accinte_word_to_double(int64_t word) {{
    double value;
    std::memcpy(&value, &word, sizeof(value));
    return value;
}}
extern "C" {get_export_declaration()} int kernel(const int64_t* args, char* error, size_t size) {{
    try {{
        kernel_body({call});
        return 0;
    }} catch (const std::exception& e) {{
        const char* message = e.what();
        if (std::strstr(message, "ZeroDivisionError") != nullptr) {{
            // Inductor's TORCH_CHECK(false, "ZeroDivisionError"): say it as Python does.
            std::snprintf(error, size, "ZeroDivisionError: integer division or modulo by zero");
            return 1;
        }}
        // The first line: a c10::Error's backtrace follows it.
        const char* end = std::strchr(message, '\\n');
        const int length = end == nullptr ? static_cast<int>(std::strlen(message))
                                          : static_cast<int>(end - message);
        std::snprintf(error, size, "%.*s", length, message);
    }} catch (...) {{
        std::snprintf(error, size, "unknown exception");
    }}
    return 1;
}}
"""
# LITERALINCLUDE END: COMPILER ENTRY POINT


# LITERALINCLUDE START: COMPILER SCHEDULING
class AccInteScheduling(CppScheduling):
    """Inductor's C++ kernels, compiled to be launched on an accinte stream."""

    def define_kernel(self, src_code: str, nodes: Any, kernel_args: Any = None) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused_name = (
            get_fused_kernel_name(nodes, config.cpp.descriptive_names)
            if config.cpp.descriptive_names
            else ""
        )
        kernel_name = "_".join(["cpp", fused_name, wrapper.next_kernel_suffix()])
        wrapper.src_to_kernel[src_code] = kernel_name
        source = src_code.replace(str(Placeholder.KERNEL_NAME), "kernel_body")
        source = source.replace(str(Placeholder.DESCRIPTIVE_NAME), kernel_name)
        source = source.replace("#pragma CMT", "//")
        args = self.kernel_group.args if kernel_args is None else kernel_args
        _, _, arg_types = args.cpp_argdefs()
        source += entry_point_source(arg_types)
        # async_compile.cpp loads the module with ctypes and returns its
        # `kernel` symbol: our entry point.
        wrapper.define_kernel(kernel_name, f"async_compile.cpp(r'''\n{source}''')", gpu=False)
        return kernel_name
# LITERALINCLUDE END: COMPILER SCHEDULING


# LITERALINCLUDE START: COMPILER WRAPPER
class AccInteWrapperMixin:
    """Kernel calls of a Python wrapper: C++ kernels go onto the current stream."""

    def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, *,
                                     device: Any = None, triton: bool = True,
                                     graph_name: str = "", current_stream_idx: Any = None,
                                     **kwargs: Any) -> None:
        device = device or V.graph.get_current_device_or_throw()
        if triton or device.type != "accinte":
            super()._generate_kernel_call_helper(  # type: ignore[misc]
                kernel_name, call_args, device=device, triton=triton, graph_name=graph_name,
                current_stream_idx=current_stream_idx, **kwargs)
            return
        index = 0 if device.index is None else device.index
        if current_stream_idx is not None and current_stream_idx != 0:
            # Inside an Inductor stream region: read the stream it selected.
            self.write_get_raw_stream_header()  # type: ignore[attr-defined]
            stream = "raw_stream"
            self.writeline(f"{stream} = get_raw_stream({index})")  # type: ignore[attr-defined]
        else:
            # Once per graph and device: `stream0 = get_raw_stream(0)` runs at
            # every call, so the kernels follow the caller's current stream.
            stream = PythonWrapperCodegen.write_get_raw_stream(self, index, graph_name)  # type: ignore[arg-type]
        self.add_import_once(_LAUNCH_IMPORT)  # type: ignore[attr-defined]
        args = "".join(f", {arg}" for arg in call_args)
        self.writeline(  # type: ignore[attr-defined]
            f"launch_cpp_kernel({kernel_name}, {kernel_name!r}, {stream}{args})")


class AccInteSubgraphWrapperCodegen(AccInteWrapperMixin, SubgraphPythonWrapperCodegen):
    """The wrapper of a subgraph (control flow, invoke_subgraph) on accinte."""


class AccInteWrapperCodegen(AccInteWrapperMixin, PythonWrapperCodegen):
    """The Python wrapper of a graph compiled for accinte."""

    @staticmethod
    def create(is_subgraph: bool, subgraph_name: str | None,
               parent_wrapper: PythonWrapperCodegen | None,
               partition_signatures: Any = None) -> PythonWrapperCodegen:
        if is_subgraph:
            assert subgraph_name is not None and parent_wrapper is not None
            return AccInteSubgraphWrapperCodegen(subgraph_name, parent_wrapper,
                                                 partition_signatures)
        return AccInteWrapperCodegen()
# LITERALINCLUDE END: COMPILER WRAPPER


# LITERALINCLUDE START: COMPILER CPP WRAPPER
class AccInteCppWrapperCodegen(CppWrapperCpu):
    """``cpp_wrapper=True`` and AOTInductor: refused with the reason."""

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> CppWrapperCpu:
        raise NotImplementedError(
            "torch.compile with cpp_wrapper=True (and AOTInductor) is not supported on accinte "
            "yet: a C++ wrapper calls its kernels directly on the host, and accinte kernels "
            "must be queued on a stream through the runtime, which needs a C++ shim for "
            "accinte streams and kernel launches that does not exist yet. Use the default "
            "Python wrapper (cpp_wrapper=False)."
        )
# LITERALINCLUDE END: COMPILER CPP WRAPPER
