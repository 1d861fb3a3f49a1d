#include <csrc/aten/native/NestedCopy.h>

#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/_to_copy.h>

namespace at::native::accinte {

// The CPU's `_to_copy` for nested tensors allocates with empty_like and
// copies buffer to buffer; on accinte that would route empty_like through the
// synchronous layout fallback. A nested tensor's bytes are its buffer, so
// copying the buffer as a dense tensor is the whole conversion, in whichever
// direction, and stays asynchronous.
at::Tensor nested_to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                          std::optional<at::Layout> layout, std::optional<at::Device> device,
                          std::optional<bool> pin_memory, bool non_blocking,
                          std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!layout || *layout == c10::kStrided,
              "to(): a nested tensor on accinte converts only to layout torch.strided, got ",
              *layout);
  TORCH_CHECK(!memory_format || *memory_format == c10::MemoryFormat::Preserve,
              "to(): a nested tensor on accinte supports only memory_format "
              "torch.preserve_format, got ", *memory_format);
  const auto* impl = at::native::get_nested_tensor_impl(self);
  at::Tensor buffer = at::_to_copy(impl->get_unsafe_storage_as_tensor(), dtype, c10::kStrided,
                                   device, pin_memory, non_blocking, std::nullopt);
  return at::detail::make_tensor<at::native::NestedTensorImpl>(
      buffer, impl->get_nested_sizes().clone(), impl->get_nested_strides().clone(),
      impl->get_storage_offsets().clone());
}

} // namespace at::native::accinte
