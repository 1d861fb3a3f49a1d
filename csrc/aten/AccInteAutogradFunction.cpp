// Registration form: a C++ torch::autograd::Function as an operator's
// autograd kernel, here for an operator that returns a view of its input.
// See Note [custom Function returning a view] in native/AliasingFunction.cpp.
//
// The operator is added to the accinte namespace that AccInteCustomOps.cpp
// created, hence TORCH_LIBRARY_FRAGMENT.
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <csrc/aten/native/AliasingFunction.h>

namespace at::native::accinte {

// LITERALINCLUDE START: AUTOGRAD FUNCTION REGISTRATION
TORCH_LIBRARY_FRAGMENT(accinte, m) {
  m.def("custom_autograd_fn_aliasing(Tensor(a) self) -> Tensor(a)");
}

TORCH_LIBRARY_IMPL(accinte, PrivateUse1, m) {
  m.impl("custom_autograd_fn_aliasing", TORCH_FN(custom_autograd_fn_aliasing));
}

TORCH_LIBRARY_IMPL(accinte, ADInplaceOrView, m) {
  m.impl("custom_autograd_fn_aliasing",
         torch::autograd::autogradNotImplementedInplaceOrViewFallback());
}

TORCH_LIBRARY_IMPL(accinte, AutogradPrivateUse1, m) {
  m.impl("custom_autograd_fn_aliasing", TORCH_FN(custom_autograd_fn_aliasing_autograd));
}
// LITERALINCLUDE END: AUTOGRAD FUNCTION REGISTRATION

} // namespace at::native::accinte
