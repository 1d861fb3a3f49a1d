#pragma once
// The global fallback: how every operator without an accinte kernel runs.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed kernel for `TORCH_LIBRARY_IMPL(_, PrivateUse1, m)`: runs the CPU
/// kernel of `op` on host copies of the arguments and copies results and
/// mutated arguments back (at::native::cpu_fallback). Before that, random
/// operators get this device's generator: a missing generator becomes the
/// device's default one, and an accinte generator is replaced by its CPU
/// engine, so torch.accinte.manual_seed governs what the CPU kernel draws.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
