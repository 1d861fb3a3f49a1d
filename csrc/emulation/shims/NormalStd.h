#pragma once
// torch.normal with a tensor of standard deviations on accinte: the check of
// their values at the call, as on CUDA. Registration: ../AccInteCudaParity.cpp.
// See Note [accinte normal checks std at the call] (NormalStd.cpp).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Boxed kernel of the `normal` overloads whose `std` is a tensor: raises
/// "normal expects all elements of std >= 0.0" at the call when an element is
/// negative, then hands the call to the fallback.
void normal_tensor_std_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// The overloads normal_tensor_std_kernel is registered for.
const char* const* normal_tensor_std_overloads();

} // namespace at::native::accinte
