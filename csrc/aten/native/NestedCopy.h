#pragma once
// `_to_copy` for nested tensors on accinte (`.to("cpu")`, `.to(dtype)`).
// Registered in ../AccInteLayoutFallback.cpp.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// Copies the nested accinte tensor `self` to `device` (the host or accinte)
/// with `dtype`: its buffer is copied as a dense tensor, on the current
/// stream, and the result shares `self`'s layout with fresh copies of its
/// sizes, strides and offsets. `layout`, if given, must be strided (nested
/// tensors report kStrided); `memory_format` must be Preserve or absent.
at::Tensor nested_to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                          std::optional<at::Layout> layout, std::optional<at::Device> device,
                          std::optional<bool> pin_memory, bool non_blocking,
                          std::optional<at::MemoryFormat> memory_format);

} // namespace at::native::accinte
