#pragma once
// CPU views of device memory: how accinte kernels compute.
//
// Device memory is host memory owned by the runtime, so a CPU tensor that
// points at a device tensor's bytes lets a CPU kernel read and write the
// device tensor in place. Such an alias owns nothing: it is only valid inside
// a kernel running on a stream (see AccInteKernel.h), where the runtime's
// access window makes device memory readable even in strict mode, and while
// stream order keeps the device memory alive.

#include <ATen/core/Tensor.h>
#include <c10/util/DimVector.h>

namespace at::native::accinte {

/// For every device tensor a kernel will read or write, on the launching
/// thread. Throws a c10::Error (RuntimeError) unless every element of `t`
/// lies inside its storage: a view left pointing past a storage that was
/// shrunk (untyped_storage().resize_) would otherwise make a kernel read or
/// write memory the tensor does not own (Note [accinte argument bounds]).
/// While the current stream captures a graph, the graph also keeps the
/// storage alive (Note [accinte graph argument lifetime]). O(dim), no device
/// access.
void check_kernel_argument(const at::Tensor& t);

/// A CPU tensor aliasing `t`'s elements (same sizes, strides, dtype,
/// conjugate and negative bits). `t` must be an accinte tensor; building the
/// alias does not touch device memory. Checks the argument first
/// (check_kernel_argument).
at::Tensor cpu_alias(const at::Tensor& t);

/// An output alias for a CPU kernel that may resize its output on the way
/// (some out= kernels use `out` as scratch space of another shape): the
/// storage is resizable and grows into ordinary host memory, after which
/// `settle` must bring the final value home.
at::Tensor resizable_cpu_alias(const at::Tensor& t);

/// A CPU storage over all the bytes of `t`'s device storage, resizable like
/// resizable_cpu_alias's. Aliases of one call's tensors that share a device
/// storage share one such storage (cpu_alias_in), so the CPU kernel's
/// overlap checks (`assert_no_partial_overlap`, TensorIterator's) see what
/// the device tensors share.
c10::Storage host_storage(const at::Tensor& t);

/// A CPU tensor over `storage` (host_storage of `t` or of a tensor sharing
/// its storage) with `t`'s sizes, strides, offset, dtype and math bits.
/// Checks the argument first (check_kernel_argument).
at::Tensor cpu_alias_in(const at::Tensor& t, const c10::Storage& storage);

/// cpu_alias_in(t, host_storage(t)), or an alias equal to it that the
/// calling thread made for an earlier call and that nothing holds any more
/// (Note [accinte alias reuse]): a loop launching kernels on the same tensors
/// builds their aliases once. The alias must not be given requires_grad (nor
/// kept beyond the call, which only stops its reuse). Checks the
/// argument first (check_kernel_argument).
at::Tensor reusable_cpu_alias(const at::Tensor& t);

/// What cpu_alias(t) returns, built only when asked for (tensor()): where
/// `t`'s elements lie and how, in a few plain values. A written argument's
/// home is compared with what the kernel left (settle) after every launch,
/// and almost always agrees, so building the tensor up front would cost
/// each launch two allocations and a TensorImpl for nothing. Holds no
/// reference to `t`'s storage (see AccInteKernel.h).
class DeferredCpuAlias {
 public:
  /// An undefined alias (of a sparse or nested tensor, which has no home).
  DeferredCpuAlias() = default;
  /// Checks `t` as cpu_alias does (check_kernel_argument).
  explicit DeferredCpuAlias(const at::Tensor& t);
  /// The home of the tensor whose CPU alias `alias` (cpu_alias_in or
  /// resizable_cpu_alias, which checked the tensor) has just been made:
  /// `alias`'s place and layout.
  static DeferredCpuAlias of_alias(const at::Tensor& alias);

  bool defined() const { return defined_; }
  void* data_ptr() const { return data_; }
  c10::IntArrayRef sizes() const { return {layout_.data(), dim_}; }
  c10::IntArrayRef strides() const { return {layout_.data() + dim_, dim_}; }
  bool is_conj() const { return conj_; }
  bool is_neg() const { return neg_; }
  /// The CPU alias itself, as cpu_alias would have made it.
  at::Tensor tensor() const;

 private:
  void* data_ = nullptr;
  bool defined_ = false;
  // The sizes, then the strides: one vector, so that a move (a written
  // argument's home moves twice per launch) moves one inline buffer, not two.
  c10::SmallVector<int64_t, 2 * c10::kDimVectorStaticSize> layout_;
  size_t dim_ = 0;
  c10::ScalarType dtype_ = c10::ScalarType::Undefined;
  bool conj_ = false;
  bool neg_ = false;
};

/// After a kernel: if `out` (from resizable_cpu_alias) no longer lies where
/// `home` (the DeferredCpuAlias of the same tensor) does, or its conj/neg
/// bits changed, copies its value there.
void settle(const at::Tensor& out, const DeferredCpuAlias& home);

/// True if `host_view` (a CPU tensor) points into `device_tensor`'s storage,
/// as a view of its CPU alias does. Compares addresses only.
bool lies_in(const at::Tensor& host_view, const at::Tensor& device_tensor);

/// The device tensor that aliases the bytes `host_view` covers, where
/// `host_view` lies in `base` (see lies_in): same sizes, strides, dtype and
/// math bits, sharing `base`'s storage.
at::Tensor device_view_of(const at::Tensor& base, const at::Tensor& host_view);

} // namespace at::native::accinte
