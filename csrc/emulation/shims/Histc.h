#pragma once
// histc on accinte, for the dtypes CUDA accepts and the CPU refuses.
// Registration: ../AccInteCudaParity.cpp. See Note [accinte CUDA parity].

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed `aten::histc` for accinte: integer inputs get an accinte kernel that
/// computes what CUDA's does (bins in integer arithmetic, the result in the
/// input's dtype); floating inputs take the fallback (the CPU's kernel).
void histc_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
