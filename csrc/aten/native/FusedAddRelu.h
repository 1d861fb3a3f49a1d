#pragma once
// Kernels of accinte::fused_add_relu(Tensor self, Tensor other) -> Tensor:
// relu(self + other) in one kernel, for tensors of one shape and dtype.
// Registration: ../AccInteNamespaceExtension.cpp. No autograd kernel: an
// inference operator (see the registration file for what autograd does).

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// PrivateUse1: one kernel on the current stream of self's device.
/// Raises at the call if the shapes, dtypes or devices differ.
at::Tensor fused_add_relu(const at::Tensor& self, const at::Tensor& other);

/// Meta: the same checks, and the output's shape and dtype.
at::Tensor fused_add_relu_meta(const at::Tensor& self, const at::Tensor& other);

} // namespace at::native::accinte
