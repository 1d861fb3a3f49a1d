#pragma once
// Python glue for memory (Memory.cpp): fraction, host statistics, memory
// history and snapshots.

#include <pybind11/pybind11.h>

namespace torch_accinte {

/// Adds _set_memory_fraction, _get_memory_fraction, _host_memory_stats,
/// _reset_{accumulated,peak}_host_memory_stats, _record_memory_history and
/// _memory_snapshot to the _C module.
void add_memory_functions(pybind11::module_& m);

} // namespace torch_accinte
