// torch.accinte.random's C++ half: the default generator of a device.
#include "Bindings.h"

#include <torch/csrc/Generator.h>

#include <csrc/runtime/AccInteGenerator.h>

namespace torch_accinte {
namespace {

namespace py = pybind11;

// For torch.accinte.random.
void add_random_functions(py::module_& m) {
  m.def(
      "_get_default_generator",
      [](c10::DeviceIndex device) {
        const at::Generator& gen = c10::accinte::getDefaultAccInteGenerator(device);
        return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(gen));
      },
      py::arg("device"), "The default torch.Generator of a device.");
}

const bool random_functions_registered = register_functions(&add_random_functions);

} // namespace
} // namespace torch_accinte
