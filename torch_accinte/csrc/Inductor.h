#pragma once
// Python glue for torch.compile (Inductor.cpp): the raw stream handle that
// Inductor's generated wrapper passes to its kernels, and the launch of a
// compiled C++ kernel as a kernel on that stream.

#include <pybind11/pybind11.h>

namespace torch_accinte {

/// Adds _get_current_raw_stream and _launch_compiled_kernel to the _C module.
void add_inductor_functions(pybind11::module_& m);

} // namespace torch_accinte
