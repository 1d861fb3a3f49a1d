#include <csrc/aten/native/TypeProperties.h>

namespace at::native::accinte {
namespace {

// Dense (strided, not quantized) tensors of the backends ATen counts as dense
// (c10/core/TensorImpl.h, has_compatible_shallow_copy_type), and accinte.
bool is_dense(c10::DispatchKeySet keys) {
  constexpr auto backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
       c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
       c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  return keys.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) && keys.has_any(backends);
}

} // namespace

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (is_dense(self.key_set()) && is_dense(from.key_set()));
}

} // namespace at::native::accinte
