#pragma once
// The _C module's functions, one file per mechanism (Memory.cpp, IPC.cpp,
// Streams.cpp, ...). Each file registers, when the library loads, the function
// that adds its own; Module.cpp calls every registered one when it builds the
// module. So a file left out of the build takes its functions with it, and no
// other file names them: a backend can take the mechanisms one at a time.

#include <pybind11/pybind11.h>

namespace torch_accinte {

using AddFunctions = void (*)(pybind11::module_& m);

/// Registers `add`; called from a namespace-scope initializer with a name of
/// the file's own (`const bool stream_functions_registered =
/// register_functions(&add_stream_functions);`), since the unity build compiles
/// several binding files as one unit. Returns true.
bool register_functions(AddFunctions add);

/// Calls every registered function on `m`, in no particular order.
void add_registered_functions(pybind11::module_& m);

} // namespace torch_accinte
