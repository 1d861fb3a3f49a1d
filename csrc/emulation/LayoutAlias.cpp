#include <csrc/emulation/LayoutAlias.h>

#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/runtime/AccInteGuard.h>

namespace at::native::accinte {
namespace {

// The dispatch key of a sparse compressed tensor on `device`.
c10::DispatchKey compressed_key(c10::Device device) {
  return device.is_cpu() ? c10::DispatchKey::SparseCsrCPU
                         : c10::DispatchKey::SparseCsrPrivateUse1;
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
  return map(t);
}
// LITERALINCLUDE END: OPERATOR LAYOUT REBUILD

} // namespace

bool has_components(const at::Tensor& t) {
  return t.defined() && (t.is_sparse() || at::sparse_csr::is_sparse_compressed(t) ||
                         at::native::get_nested_tensor_impl_or_null(t) != nullptr);
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
