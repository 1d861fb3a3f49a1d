// torch.accinte.streams' C++ half: what torch.Event does not reach of the
// runtime's events.
#include "Bindings.h"

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteStream.h>

#include <cstdint>

namespace torch_accinte {
namespace {

namespace py = pybind11;

// For torch.accinte.streams.
void add_stream_functions(py::module_& m) {
  m.def(
      "_event_elapsed_time",
      [](uintptr_t start, uintptr_t end) {
        TORCH_CHECK(start != 0 && end != 0,
                    "Both events must be recorded before calculating elapsed time.");
        float ms = 0;
        {
          py::gil_scoped_release no_gil;
          ACCINTE_CHECK(acEventElapsedTime(&ms, reinterpret_cast<acEvent_t>(start),
                                           reinterpret_cast<acEvent_t>(end)));
        }
        return ms;
      },
      py::arg("start"), py::arg("end"),
      "acEventElapsedTime on two events given by their torch.Event.event_id.");
}

const bool stream_functions_registered = register_functions(&add_stream_functions);

} // namespace
} // namespace torch_accinte
