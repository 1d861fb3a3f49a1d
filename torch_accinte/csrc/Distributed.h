#pragma once
// Python glue for torch.distributed (Distributed.cpp): the ProcessGroupACCL
// class, which torch_accinte/distributed.py registers as the "accl" backend.

#include <pybind11/pybind11.h>

namespace torch_accinte {

/// Adds ProcessGroupACCL to the _C module. Needs torch.distributed's types
/// (c10d::Backend), registered when torch is imported.
void add_distributed_functions(pybind11::module_& m);

} // namespace torch_accinte
