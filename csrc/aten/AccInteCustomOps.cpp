// Registration form: a custom operator in the backend's own namespace.
//
// TORCH_LIBRARY(accinte, m) creates the `accinte` namespace (once per
// process: every other file that adds operators to it uses
// TORCH_LIBRARY_FRAGMENT, see AccInteNamespaceExtension.cpp) and defines the
// schema; TORCH_LIBRARY_IMPL then gives the operator a kernel per dispatch
// key. Python calls it as torch.ops.accinte.custom_abs.
//
//   PrivateUse1          computes on the device
//   Meta                 shapes only: fake tensors, torch.compile, opcheck
//   AutogradPrivateUse1  the backward, for accinte tensors that require grad
//
// The kernels are in native/CustomAbs.{h,cpp}.
#include <torch/library.h>

#include <csrc/aten/native/CustomAbs.h>

namespace at::native::accinte {

// LITERALINCLUDE START: CUSTOM OP
TORCH_LIBRARY(accinte, m) {
  m.def("custom_abs(Tensor self) -> Tensor");
}

TORCH_LIBRARY_IMPL(accinte, PrivateUse1, m) {
  m.impl("custom_abs", TORCH_FN(custom_abs));
}

TORCH_LIBRARY_IMPL(accinte, Meta, m) {
  m.impl("custom_abs", TORCH_FN(custom_abs_meta));
}

TORCH_LIBRARY_IMPL(accinte, AutogradPrivateUse1, m) {
  m.impl("custom_abs", TORCH_FN(custom_abs_autograd));
}
// LITERALINCLUDE END: CUSTOM OP

} // namespace at::native::accinte
