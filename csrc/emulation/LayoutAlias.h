#pragma once
// Sparse and nested tensors on accinte: their CPU counterparts over device
// memory, and device counterparts of CPU results.
//
// A sparse COO tensor is indices + values, a sparse compressed one (CSR, CSC,
// BSR, BSC) compressed indices + plain indices + values, a nested tensor a
// buffer + sizes, strides and offsets kept on the host. On accinte the
// component tensors are ordinary dense device tensors (the nested metadata
// stays on the host, as on CUDA), so these layouts move between host and
// device component by component. A quantized tensor is treated the same way:
// its one component is its integers (a dense tensor of the underlying type),
// its quantizer is host metadata. See Note [accinte layout fallbacks].

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace at::native::accinte {

/// True for a sparse (any layout), nested or quantized tensor: one that a CPU
/// kernel cannot read as a plain strided tensor of its dtype.
bool has_components(const at::Tensor& t);

/// The dense tensors holding `t`'s elements: `t` itself for a strided tensor;
/// indices and values (COO); compressed indices, plain indices and values
/// (compressed layouts); the whole buffer (nested); the integers (quantized).
std::vector<at::Tensor> components(const at::Tensor& t);

/// The CPU counterpart of the accinte tensor `t`, any layout: the same
/// tensor with every component a CPU alias (CpuAlias.h). Builds metadata
/// only and touches no device memory; the result may be used only inside a
/// kernel, like any CPU alias.
at::Tensor host_alias(const at::Tensor& t);

/// Maps a dense CPU component to the device tensor that replaces it.
using ComponentToDevice = std::function<at::Tensor(const at::Tensor&)>;

/// The counterpart of the CPU tensor `t` (any layout) on `device`, with every
/// component replaced by `to_device(component)`; nested metadata is shared.
at::Tensor device_counterpart(const at::Tensor& t, c10::Device device,
                              const ComponentToDevice& to_device);

/// Makes the sparse accinte tensor `device_tensor` hold what `host` (its host
/// alias after a CPU kernel mutated it) now holds: sizes, dimensions,
/// coalescing and components, each replaced by `to_device(component)`. No-op
/// for strided and nested tensors, whose CPU kernels write their elements in
/// place.
void update_from_host(const at::Tensor& device_tensor, const at::Tensor& host,
                      const ComponentToDevice& to_device);

} // namespace at::native::accinte
