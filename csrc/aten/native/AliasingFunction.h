#pragma once
// Kernels of accinte::custom_autograd_fn_aliasing(Tensor(a) self) -> Tensor(a),
// an operator whose output is a view of its input and whose backward is a
// C++ torch::autograd::Function. Registration: ../AccInteAutogradFunction.cpp.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// PrivateUse1: a tensor sharing self's memory, sizes, strides and math bits.
/// Makes no autograd view of it: the ADInplaceOrView kernel does, from the
/// schema.
at::Tensor custom_autograd_fn_aliasing(const at::Tensor& self);

/// AutogradPrivateUse1: applies the Function, whose output is marked as a
/// view of self created inside a custom Function.
at::Tensor custom_autograd_fn_aliasing_autograd(const at::Tensor& self);

} // namespace at::native::accinte
