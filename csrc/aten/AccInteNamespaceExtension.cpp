// Registration form: extending an existing namespace from another file.
//
// A namespace is created once per process, by TORCH_LIBRARY (accinte's is in
// AccInteCustomOps.cpp); a second TORCH_LIBRARY(accinte, ...) would fail at
// load time. Any other file, or another library loaded later (a vendor's
// extra kernels package, say), adds operators to it with
// TORCH_LIBRARY_FRAGMENT, and they appear next to the others as
// torch.ops.accinte.*. The same works for any custom namespace, never for
// aten: new operators belong in the backend's own namespace.
//
// fused_add_relu has kernels for PrivateUse1 and Meta only. Without an
// autograd kernel PyTorch's autograd fallback runs it as is and warns if a
// gradient would have to flow through it.
#include <torch/library.h>

#include <csrc/aten/native/FusedAddRelu.h>

namespace at::native::accinte {

// LITERALINCLUDE START: NAMESPACE EXTENSION
TORCH_LIBRARY_FRAGMENT(accinte, m) {
  m.def("fused_add_relu(Tensor self, Tensor other) -> Tensor");
}

TORCH_LIBRARY_IMPL(accinte, PrivateUse1, m) {
  m.impl("fused_add_relu", TORCH_FN(fused_add_relu));
}

TORCH_LIBRARY_IMPL(accinte, Meta, m) {
  m.impl("fused_add_relu", TORCH_FN(fused_add_relu_meta));
}
// LITERALINCLUDE END: NAMESPACE EXTENSION

} // namespace at::native::accinte
