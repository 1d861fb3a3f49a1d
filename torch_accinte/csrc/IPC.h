#pragma once
// Python glue for sharing accinte storages across processes (IPC.cpp), the
// C++ half of torch_accinte/accinte/reductions.py.

#include <pybind11/pybind11.h>

namespace torch_accinte {

/// Adds _share_storage, _open_shared_storage, _ipc_wait_event,
/// _ipc_counter_value, _ipc_free_counter and _ipc_release_reference to the
/// _C module.
void add_ipc_functions(pybind11::module_& m);

} // namespace torch_accinte
