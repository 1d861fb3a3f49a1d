#pragma once
// _has_compatible_shallow_copy_type for accinte (registered in
// ../AccInteExtra.cpp for the AutogradPrivateUse1 and PrivateUse1 keys).
//
// `param.data = t` and Module.to() decide with this operator whether `t`'s
// TensorImpl can be shallow-copied into an existing tensor. ATen's answer
// treats dense tensors of the CPU, CUDA, XPU and a few others as
// interchangeable but not PrivateUse1 ones, so without this Module.to("accinte")
// replaced every Parameter with a new object: weights tied across modules
// (an embedding and its output head) came apart, and optimizers built
// before the move kept the CPU parameters.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// True when `from` can replace `self`'s data: ATen's rule, with dense
/// accinte tensors counted among the dense tensors.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

} // namespace at::native::accinte
