#pragma once
// torch.linalg.eigvals on accinte: a non-finite input refused at the call
// instead of crashing the process. Registration: ../AccInteCudaParity.cpp.
// See Note [accinte eigvals refuses non-finite input] (EigvalsFinite.cpp).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed kernel of `_linalg_eigvals` and `linalg_eigvals.out`: raises
/// "torch.linalg.eigvals: input tensor should not contain infs or NaNs" when
/// `self` holds one, then hands the call to the fallback.
void eigvals_finite_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// The operators eigvals_finite_kernel is registered for.
const char* const* eigvals_finite_operators();

} // namespace at::native::accinte
