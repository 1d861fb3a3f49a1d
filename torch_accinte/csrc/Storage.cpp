// torch.accinte.backend_meta's and torch.accinte.serialization's C++ half:
// BackendMeta format tags and accinte storages.
#include "Bindings.h"

#include <torch/csrc/Storage.h>

#include <csrc/core/AccInteStorageImpl.h>
#include <csrc/core/AccInteTensorMeta.h>

#include "Arguments.h"

namespace torch_accinte {
namespace {

namespace py = pybind11;

// For torch.accinte.backend_meta and torch.accinte.serialization: BackendMeta
// and storages.
void add_storage_functions(py::module_& m) {
  m.def(
      "_get_backend_format",
      [](py::handle t) {
        return c10::accinte::get_tensor_format(tensor_arg(t, "_get_backend_format"));
      },
      py::arg("tensor"), "The format tag in an accinte tensor's BackendMeta (0: none set).");
  m.def(
      "_set_backend_format",
      [](py::handle t, int64_t format) {
        c10::accinte::set_tensor_format(tensor_arg(t, "_set_backend_format"), format);
      },
      py::arg("tensor"), py::arg("format"),
      "Sets the format tag in an accinte tensor's BackendMeta.");
  m.def(
      "_is_accinte_storage_impl",
      [](py::handle obj) {
        return c10::accinte::as_accinte_storage(storage_arg(obj, "_is_accinte_storage_impl")) !=
               nullptr;
      },
      py::arg("obj"), "True if the storage's StorageImpl is an AccInteStorageImpl.");
  m.def(
      "_set_storage_resizable",
      [](py::handle obj, bool resizable) {
        storage_arg(obj, "_set_storage_resizable").unsafeGetStorageImpl()->set_resizable(resizable);
      },
      py::arg("obj"), py::arg("resizable"),
      "Whether the storage may grow or shrink (StorageImpl::set_resizable).");
  m.def(
      "_storage_serial",
      [](py::handle obj) {
        const auto* impl = c10::accinte::as_accinte_storage(storage_arg(obj, "_storage_serial"));
        TORCH_CHECK(impl != nullptr, "_storage_serial() expects an accinte storage, got one of ",
                    storage_arg(obj, "_storage_serial").device());
        return impl->serial();
      },
      py::arg("obj"), "The serial number of an AccInteStorageImpl.");
}

const bool storage_functions_registered = register_functions(&add_storage_functions);

} // namespace
} // namespace torch_accinte
