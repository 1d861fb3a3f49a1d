#pragma once
// Operators whose CPU kernel refuses half and bfloat16 where CUDA's accepts
// them, computed in float. Registration: ../AccInteCudaParity.cpp.
// See Note [accinte low precision as CUDA].

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <string>
#include <vector>

namespace at::native::accinte {

/// Operators (`"aten::avg_pool3d"`...) registered with
/// `float_compute_kernel`; AccInteStructuredFallback.cpp leaves them alone.
const std::vector<std::string>& float_compute_operators();

/// Boxed kernel: half and bfloat16 tensor arguments are converted to float,
/// the CPU's float kernel runs (through the fallback, as a stream kernel),
/// and the tensors returned are converted back to the first low-precision
/// argument's dtype. Calls without half or bfloat16 go to the fallback as
/// they are.
void float_compute_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
