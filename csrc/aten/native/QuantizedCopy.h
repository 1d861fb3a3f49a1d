#pragma once
// Copies of quantized tensors to, from and on accinte. Registration:
// ../AccInteQuantized.cpp. See Note [accinte quantized tensors].

#include <ATen/core/Tensor.h>

#include <optional>

namespace at::native::accinte {

/// `copy_` with a quantized accinte tensor on either side: the CPU's
/// quantized copy on host aliases, as a kernel on the accinte side's current
/// stream, waited for. `self` takes the quantizer the CPU's copy gives it.
at::Tensor& quantized_copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking);

/// `_to_copy` of a quantized accinte tensor: the CPU's `_to_copy` on its host
/// alias, waited for; the result stays on the CPU when asked for, and is
/// moved to the target accinte device otherwise.
at::Tensor quantized_to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                             std::optional<at::Layout> layout, std::optional<at::Device> device,
                             std::optional<bool> pin_memory, bool non_blocking,
                             std::optional<at::MemoryFormat> memory_format);

} // namespace at::native::accinte
