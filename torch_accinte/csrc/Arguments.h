#pragma once
// Python arguments of the _C functions: a TypeError that names what was
// passed where a tensor or a storage was expected.

#include <pybind11/pybind11.h>

#include <torch/csrc/Storage.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>

namespace torch_accinte {

namespace py = pybind11;

// A torch.Tensor argument, or a TypeError naming what was passed instead.
inline const at::Tensor& tensor_arg(const py::handle& obj, const char* function) {
  if (!THPVariable_Check(obj.ptr())) {
    throw py::type_error(std::string(function) + "() expects a torch.Tensor, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  return THPVariable_Unpack(obj.ptr());
}

// The storage of a torch.Tensor or torch.UntypedStorage argument.
inline c10::Storage storage_arg(const py::handle& obj, const char* function) {
  if (THPStorage_Check(obj.ptr())) {
    return THPStorage_Unpack(obj.ptr());
  }
  if (THPVariable_Check(obj.ptr())) {
    return THPVariable_Unpack(obj.ptr()).storage();
  }
  throw py::type_error(std::string(function) +
                       "() expects a torch.Tensor or torch.UntypedStorage, got " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

} // namespace torch_accinte
