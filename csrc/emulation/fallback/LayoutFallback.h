#pragma once
// The fallback for sparse and nested tensors on accinte.
// See Note [accinte layout fallbacks] in LayoutFallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed kernel for `TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m)`, its
/// SparseCsrPrivateUse1 and NestedTensorPrivateUse1 twins, and for the
/// operators whose CompositeExplicitAutograd default would otherwise win on
/// those keys. Runs the CPU's kernel on host aliases of the arguments and
/// waits for it. Throws the CPU kernel's error; an operator the CPU has no
/// kernel for with these layouts raises NotImplementedError naming the
/// operator and the layout.
void layout_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
