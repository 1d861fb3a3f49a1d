#pragma once
// The minimal operator set: the kernels a backend must provide before a
// tensor can be created, viewed, resized, copied and printed. Every other
// operator reaches the device through the global fallback (Fallback.h).
// Registered in ../AccInteMinimal.cpp.

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace at::native::accinte {

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device, std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format);

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory);

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset);

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format);

at::Tensor _reshape_alias(const at::Tensor& self, c10::IntArrayRef size,
                          c10::IntArrayRef stride);

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size);

at::Scalar _local_scalar_dense(const at::Tensor& self);

at::Tensor& set_source_Storage(at::Tensor& self, c10::Storage source);
at::Tensor& set_source_Storage_storage_offset(at::Tensor& self, c10::Storage source,
                                              int64_t storage_offset, c10::IntArrayRef size,
                                              c10::IntArrayRef stride);
at::Tensor& set_source_Tensor(at::Tensor& self, const at::Tensor& source);

/// Copies self into dst (one of them on accinte); see Copy.cpp.
at::Tensor _copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
/// Resizes dst to self's shape, then copies (used for out= arguments).
at::Tensor _copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);

} // namespace at::native::accinte
