#pragma once
// Kernels of the custom operator accinte::custom_abs, one per dispatch key.
// Schema and registration: ../AccInteCustomOps.cpp.
//
// custom_abs(self) is torch.abs(self): same dtype for real inputs, the real
// dtype for complex ones, gradient grad * sgn(self).

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// PrivateUse1: allocates the output on self's device and queues the
/// computation on that device's current stream; returns before it runs.
at::Tensor custom_abs(const at::Tensor& self);

/// Meta: the output's shape and dtype, no data. Works on symbolic shapes, so
/// fake tensors and torch.compile's dynamic shapes use it as is.
at::Tensor custom_abs_meta(const at::Tensor& self);

/// AutogradPrivateUse1: records the backward, then runs the operator below
/// autograd (the PrivateUse1 kernel, or a fake/meta one while tracing).
at::Tensor custom_abs_autograd(const at::Tensor& self);

} // namespace at::native::accinte
