#pragma once
// The global fallback: how every operator without an accinte kernel runs.
// See Note [accinte fallback] in Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed kernel for `TORCH_LIBRARY_IMPL(_, PrivateUse1, m)`.
void accinte_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
