#pragma once
// AccInteTensorMeta: backend-private metadata attached to an accinte tensor.
//
// Note [Tensor format]
// c10::TensorImpl holds one c10::BackendMeta pointer that PyTorch carries but
// never reads: a backend keeps there whatever it needs to know about a tensor
// beyond sizes, strides and dtype. A vendor whose kernels prefer a private
// memory layout (blocked, tiled, padded) records that layout there, so that
// kernels know how to read the bytes and copies to the host convert them.
// Here the metadata is such a format tag, an integer with 0 meaning the
// plain strided layout. accinte kernels do not interpret it; it exists to
// show the mechanism:
//   - it is set and read from Python (torch.accinte._set_backend_format);
//   - shallow copies of the TensorImpl (detach(), .data) copy it through
//     BackendMeta::clone, while views and operator results start without it,
//     as PyTorch makes their TensorImpls afresh;
//   - torch.save/torch.load carry it (AccInteSerialization.cpp), when the
//     tensor is loaded onto accinte.

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <cstdint>

namespace c10::accinte {

// LITERALINCLUDE START: BACKEND META CLASS
struct C10_EXPORT AccInteTensorMeta final : public c10::BackendMeta {
  explicit AccInteTensorMeta(int64_t format) : format(format) {}

  /// A copy, so that tensors sharing a TensorImpl's metadata by shallow copy
  /// can later change their formats independently.
  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>& ptr) const override;

  int64_t format;
};
// LITERALINCLUDE END: BACKEND META CLASS

/// The plain strided layout, which a tensor without metadata has.
constexpr int64_t kDefaultFormat = 0;

/// The format tag of accinte tensor `t` (kDefaultFormat when none was set).
/// Throws if `t` is not an accinte tensor.
C10_EXPORT int64_t get_tensor_format(const at::Tensor& t);

/// Sets the format tag of accinte tensor `t`; `format` must be >= 0.
/// Throws if `t` is not an accinte tensor.
C10_EXPORT void set_tensor_format(const at::Tensor& t, int64_t format);

} // namespace c10::accinte
