#include "Bindings.h"

#include <vector>

namespace torch_accinte {
namespace {

// A function-local static: registrations run in static initializers of other
// files, in an order the linker picks.
std::vector<AddFunctions>& registered() {
  static std::vector<AddFunctions> adders;
  return adders;
}

} // namespace

bool register_functions(AddFunctions add) {
  registered().push_back(add);
  return true;
}

void add_registered_functions(pybind11::module_& m) {
  for (const AddFunctions add : registered()) {
    add(m);
  }
}

} // namespace torch_accinte
