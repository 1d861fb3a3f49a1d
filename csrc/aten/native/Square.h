#pragma once
// accinte's aten::square, replacing PyTorch's CompositeImplicitAutograd
// default (pow(self, 2)). Registration: ../AccInteCompositeOverride.cpp.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// self * self: one multiplication per element instead of the general power
/// kernel, with the dtype torch.square gives (bool becomes int64, as in
/// pow(self, 2)). Written with differentiable operators, so it also serves as
/// the autograd kernel: mul's backward gives 2 * self * grad. Throws
/// NotImplementedError, at the call, for the dtypes the CPU's pow has no
/// kernel for (uint16/32/64, complex32, float8), with the CPU's message.
at::Tensor square(const at::Tensor& self);

} // namespace at::native::accinte
