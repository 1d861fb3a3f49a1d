// torch.accinte.graphs' C++ half: capture status and graph memory pools.
#include "Bindings.h"

#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteStream.h>

namespace torch_accinte {
namespace {

namespace py = pybind11;

// For torch.accinte.graphs.
void add_graph_functions(py::module_& m) {
  m.def(
      "_is_current_stream_capturing",
      [] { return c10::accinte::is_stream_capturing(c10::accinte::getCurrentAccInteStream()); },
      "True while the current stream of the current device captures a graph "
      "(acStreamIsCapturing).");
  m.def(
      "_graph_pool_reserved_bytes",
      [](c10::DeviceIndex device, c10::MempoolId_t pool) {
        return c10::accinte::pool_reserved_bytes(device, pool);
      },
      py::arg("device"), py::arg("pool"),
      "Bytes the caching allocator holds in a graph's private memory pool.");
}

const bool graph_functions_registered = register_functions(&add_graph_functions);

} // namespace
} // namespace torch_accinte
