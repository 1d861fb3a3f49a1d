#include <csrc/emulation/LayoutAlias.h>

#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/quantized/QTensorImpl.h>
#include <ATen/quantized/Quantizer.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteGuard.h>

namespace at::native::accinte {
namespace {

// The dispatch key of a sparse compressed tensor on `device`.
c10::DispatchKey compressed_key(c10::Device device) {
  return device.is_cpu() ? c10::DispatchKey::SparseCsrCPU
                         : c10::DispatchKey::SparseCsrPrivateUse1;
}

// The integers of the quantized tensor `t`: a dense tensor of its underlying
// type (int8, uint8, int32...) over the same storage and layout.
at::Tensor integers_of(const at::Tensor& t) {
  const c10::DispatchKey key =
      t.is_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::PrivateUse1;
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::TensorImpl::VIEW, c10::Storage(t.storage()), c10::DispatchKeySet(key),
      c10::scalarTypeToTypeMeta(c10::toUnderlying(t.scalar_type())));
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return at::Tensor(std::move(impl));
}

// `t`'s quantizer, made to own its per-channel scales and zero points: a CPU
// kernel given device scales (quantize_per_channel) keeps their CPU aliases,
// which die with the device tensors. Copied by a kernel on `device`'s
// current stream, waited for (device memory is read only by kernels).
at::QuantizerPtr owned_quantizer(const at::Tensor& t, c10::Device device) {
  at::QuantizerPtr quantizer = at::get_qtensorimpl(t)->quantizer();
  if (quantizer->qscheme() != c10::kPerChannelAffine &&
      quantizer->qscheme() != c10::kPerChannelAffineFloatQParams) {
    return quantizer;
  }
  auto qparams = std::make_shared<std::pair<at::Tensor, at::Tensor>>();
  run_and_wait(c10::accinte::getCurrentAccInteStream(device.index()), [quantizer, qparams]() {
    const auto* per_channel = static_cast<const at::PerChannelAffineQuantizer*>(quantizer.get());
    *qparams = {per_channel->scales().clone(), per_channel->zero_points().clone()};
  }, "aten::q_per_channel_scales");
  const auto* per_channel = static_cast<const at::PerChannelAffineQuantizer*>(quantizer.get());
  return at::make_per_channel_affine_quantizer(qparams->first, qparams->second,
                                               per_channel->axis(), quantizer->scalar_type());
}

// A quantized tensor with `t`'s dtype and quantizer over the integers
// `integers` (whose device it takes). The quantizer stays on the host, as
// nested metadata does; a device tensor's owns its per-channel parameters.
at::Tensor quantized_over(const at::Tensor& integers, const at::Tensor& t) {
  const bool on_host = integers.is_cpu();
  const c10::DispatchKey key =
      on_host ? c10::DispatchKey::QuantizedCPU : c10::DispatchKey::QuantizedPrivateUse1;
  at::Tensor out = at::detail::make_tensor<at::QTensorImpl>(
      c10::Storage(integers.storage()), c10::DispatchKeySet(key), t.dtype(),
      on_host ? at::get_qtensorimpl(t)->quantizer() : owned_quantizer(t, integers.device()));
  out.unsafeGetTensorImpl()->set_sizes_and_strides(integers.sizes(), integers.strides(),
                                                   integers.storage_offset());
  return out;
}

// LITERALINCLUDE START: OPERATOR LAYOUT REBUILD
// Rebuilds `t` (any layout) on `device` with every component mapped through
// `map`: the one way both directions, host alias and device counterpart, go.
at::Tensor rebuild(const at::Tensor& t, c10::Device device, const ComponentToDevice& map) {
  if (t.is_sparse()) {
    const auto* impl = at::sparse::get_sparse_impl(t);
    return at::native::new_with_dims_and_tensor_sparse_symint(
        impl->sparse_dim(), impl->dense_dim(), t.sym_sizes(), map(impl->indices()),
        map(impl->values()), t.scalar_type(), c10::kSparse, device, std::nullopt,
        impl->coalesced());
  }
  if (at::sparse_csr::is_sparse_compressed(t)) {
    const auto* impl = at::sparse_csr::get_sparse_csr_impl(t);
    at::Tensor out = at::detail::make_tensor<at::SparseCsrTensorImpl>(
        c10::DispatchKeySet(compressed_key(device)), device, t.layout(), t.dtype());
    at::sparse_csr::get_sparse_csr_impl(out)->set_member_tensors(
        map(impl->compressed_indices()), map(impl->plain_indices()), map(impl->values()),
        t.sizes());
    return out;
  }
  if (const auto* impl = at::native::get_nested_tensor_impl_or_null(t)) {
    // Sizes, strides and offsets are host tensors on every device.
    return at::detail::make_tensor<at::native::NestedTensorImpl>(
        map(impl->get_unsafe_storage_as_tensor()), impl->get_nested_sizes(),
        impl->get_nested_strides(), impl->get_storage_offsets());
  }
  if (t.is_quantized()) {
    return quantized_over(map(integers_of(t)), t);
  }
  return map(t);
}
// LITERALINCLUDE END: OPERATOR LAYOUT REBUILD

} // namespace

bool has_components(const at::Tensor& t) {
  return t.defined() && (t.is_sparse() || at::sparse_csr::is_sparse_compressed(t) ||
                         at::native::get_nested_tensor_impl_or_null(t) != nullptr ||
                         t.is_quantized());
}

std::vector<at::Tensor> components(const at::Tensor& t) {
  if (t.is_sparse()) {
    const auto* impl = at::sparse::get_sparse_impl(t);
    return {impl->indices(), impl->values()};
  }
  if (at::sparse_csr::is_sparse_compressed(t)) {
    const auto* impl = at::sparse_csr::get_sparse_csr_impl(t);
    return {impl->compressed_indices(), impl->plain_indices(), impl->values()};
  }
  if (const auto* impl = at::native::get_nested_tensor_impl_or_null(t)) {
    return {impl->get_unsafe_storage_as_tensor()};
  }
  if (t.is_quantized()) {
    return {integers_of(t)};
  }
  return {t};
}

at::Tensor host_alias(const at::Tensor& t) {
  return rebuild(t, c10::Device(c10::kCPU), [](const at::Tensor& c) { return cpu_alias(c); });
}

at::Tensor device_counterpart(const at::Tensor& t, c10::Device device,
                              const ComponentToDevice& to_device) {
  c10::accinte::AccInteGuard guard(device.index());
  return rebuild(t, device, to_device);
}

void update_from_host(const at::Tensor& device_tensor, const at::Tensor& host,
                      const ComponentToDevice& to_device) {
  if (device_tensor.is_sparse()) {
    const auto* from = at::sparse::get_sparse_impl(host);
    auto* to = at::sparse::get_sparse_impl(device_tensor);
    to->raw_resize_(from->sparse_dim(), from->dense_dim(), host.sizes());
    to->set_indices_and_values_unsafe(to_device(from->indices()), to_device(from->values()));
    to->set_coalesced(from->coalesced());
  } else if (at::sparse_csr::is_sparse_compressed(device_tensor)) {
    const auto* from = at::sparse_csr::get_sparse_csr_impl(host);
    at::sparse_csr::get_sparse_csr_impl(device_tensor)
        ->set_member_tensors(to_device(from->compressed_indices()),
                             to_device(from->plain_indices()), to_device(from->values()),
                             host.sizes());
  }
}

} // namespace at::native::accinte
