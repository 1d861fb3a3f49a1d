#include <csrc/emulation/CpuAlias.h>

#include <ATen/EmptyTensor.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include <csrc/runtime/AccInteGraphsUtils.h>

#include <array>
#include <atomic>

namespace at::native::accinte {

// Note [accinte argument bounds]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor's sizes, strides and offset are checked against its storage when
// the view is made, but the storage can shrink afterwards
// (x.untyped_storage().resize_(16) leaves every other view of it in place).
// CUDA then reports an illegal address from the kernel; the emulator checks
// before launch instead: every tensor a kernel reads or writes becomes a CPU
// alias (cpu_alias) or a queued copy (_copy_from), and both check that the
// tensor's last byte lies inside its storage. A few integer operations per
// argument; the storage's size is read on the launching thread, which is
// the only thread that can change it as far as this launch is concerned.
// LITERALINCLUDE START: EXECUTION ARGUMENT BOUNDS
void check_kernel_argument(const at::Tensor& t) {
  if (t.numel() == 0) {
    return;
  }
  const c10::Storage& storage = t.storage();
  const size_t needed = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.itemsize(),
                                                         t.storage_offset());
  TORCH_CHECK(storage.data() != nullptr && needed <= storage.nbytes(),
              "accinte: a kernel argument of shape ", t.sizes(), ", strides ", t.strides(),
              " and storage offset ", t.storage_offset(), " needs ", needed,
              " bytes of storage, but its storage has ", storage.nbytes(),
              " (was the storage shrunk with untyped_storage().resize_() after this view was "
              "made?); refusing to launch a kernel that would access memory outside it");
  c10::accinte::note_captured_storage(storage);
}
// LITERALINCLUDE END: EXECUTION ARGUMENT BOUNDS

namespace {

// LITERALINCLUDE START: EXECUTION CPU ALIAS
// A CPU tensor over `t`'s bytes, as at::for_blob(t.data_ptr(), t.sizes())
// .strides(t.strides()) makes one (a storage of exactly the bytes the layout
// spans, from the first element; with `resizable`, one that grows into host
// memory through the CPU allocator), without the builder, which cost twice
// what the TensorImpl does: a launch makes one per fresh output.
at::Tensor make_alias(const at::Tensor& t, bool resizable) {
  check_kernel_argument(t);
  const size_t nbytes = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.itemsize());
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(c10::Storage::use_byte_size_t(), nbytes,
                   c10::DataPtr(t.data_ptr(), c10::Device(c10::kCPU)),
                   resizable ? c10::GetAllocator(c10::kCPU) : nullptr, resizable),
      c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides());
  at::Tensor alias(std::move(impl));
  if (t.is_conj()) {
    alias._set_conj(true);
  }
  if (t.is_neg()) {
    alias._set_neg(true);
  }
  return alias;
}
// LITERALINCLUDE END: EXECUTION CPU ALIAS

} // namespace

at::Tensor cpu_alias(const at::Tensor& t) {
  return make_alias(t, /*resizable=*/false);
}

at::Tensor resizable_cpu_alias(const at::Tensor& t) {
  return make_alias(t, /*resizable=*/true);
}

c10::Storage host_storage(const at::Tensor& t) {
  const c10::Storage& device = t.storage();
  return c10::Storage(c10::Storage::use_byte_size_t(), device.nbytes(),
                      c10::DataPtr(const_cast<void*>(device.data()), c10::Device(c10::kCPU)),
                      c10::GetAllocator(c10::kCPU), /*resizable=*/true);
}

namespace {

// cpu_alias_in without the check.
at::Tensor make_alias_in(const at::Tensor& t, const c10::Storage& storage) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  at::Tensor alias(std::move(impl));
  if (t.is_conj()) {
    alias._set_conj(true);
  }
  if (t.is_neg()) {
    alias._set_neg(true);
  }
  return alias;
}

} // namespace

at::Tensor cpu_alias_in(const at::Tensor& t, const c10::Storage& storage) {
  check_kernel_argument(t);
  return make_alias_in(t, storage);
}

// Note [accinte alias reuse]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every launch gives its kernel a CPU alias of each device tensor: a
// TensorImpl with its version counter and a host StorageImpl, three
// allocations made on the launching thread, read cold on the worker, and
// destroyed on the host when the kernel's closure is released (Note [accinte
// kernels release on the host]); for a small operator that is a fifth of the
// launch's host instructions. Loops launch kernels on the same tensors over
// and over, so each launching thread keeps the last aliases it made and
// hands one out again when
//
//   - nothing else holds it or its storage (both use counts are one): every
//     closure that had it has been released, and no view of it survives, so
//     no kernel uses it and no other thread can reach it; and
//   - it is what a new alias would be: the device storage's bytes (same
//     address and size: a kernel that resized it moved it to host memory),
//     the tensor's offset, sizes, strides and dtype, the dispatch keys it was
//     made with (the conjugate and negative bits, and inference mode, under
//     which aliases are inference tensors), and no autograd metadata attached
//     to it since.
//
// Reading the alias is then safe: the thread that released the last closure
// holding it made the kernel's writes visible (release and acquire on the
// reference count). An alias owns no device memory and a stale one fails
// these checks, so nothing ever needs to be invalidated; a tensor freed and
// replaced by another at the same address gets the same alias, which is
// right. A cache holding an alias a kernel still uses only keeps it alive.
//
// The same holds for the wrapped numbers a call passes (the 0-dim CPU tensor
// the bindings make of the `1` in x.add_(1), see reusable_wrapped_number in
// CpuArguments.cpp): the launching thread keeps the last few it passed, and
// passes one again, by value and dtype, once nothing else holds it. The
// worker then reads a scalar it has read before: on a quiet 2-core machine
// (6 interleaved runs of 11 repeats) the small in-place op took 3.24 us
// with it and 3.39 us without (the CPU: 2.55 us).
namespace {

struct CachedAlias {
  const c10::StorageImpl* device = nullptr; // the device storage it aliases
  c10::DispatchKeySet keys;                 // its keys when made
  at::Tensor alias;
};

// Two per tensor cover a loop whose next launch comes before the previous
// kernel's closure is released; a few tensors per call.
constexpr size_t kCachedAliases = 8;

struct AliasCache {
  std::array<CachedAlias, kCachedAliases> entries;
  size_t next = 0; // the entry replaced next
};

bool is_free_alias_of(const CachedAlias& entry, const at::Tensor& t) {
  const at::Tensor& alias = entry.alias;
  const c10::Storage& host = alias.unsafeGetTensorImpl()->unsafe_storage();
  if (alias.use_count() != 1 || host.use_count() != 1) {
    return false;
  }
  // Pairs with the release of the last other reference (see the Note).
  std::atomic_thread_fence(std::memory_order_acquire);
  const c10::Storage& device = t.storage();
  return host.data() == device.data() && host.nbytes() == device.nbytes() &&
         alias.key_set() == entry.keys && alias.is_conj() == t.is_conj() &&
         alias.is_neg() == t.is_neg() && alias.is_inference() == c10::InferenceMode::is_enabled() &&
         alias.dtype() == t.dtype() && alias.storage_offset() == t.storage_offset() &&
         alias.sizes() == t.sizes() && alias.strides() == t.strides() &&
         alias.unsafeGetTensorImpl()->autograd_meta() == nullptr;
}

} // namespace

at::Tensor reusable_cpu_alias(const at::Tensor& t) {
  check_kernel_argument(t);
  thread_local AliasCache cache;
  const c10::StorageImpl* device = t.storage().unsafeGetStorageImpl();
  for (const CachedAlias& entry : cache.entries) {
    if (entry.device == device && is_free_alias_of(entry, t)) {
      return entry.alias;
    }
  }
  at::Tensor alias = make_alias_in(t, host_storage(t));
  CachedAlias& entry = cache.entries[cache.next];
  cache.next = (cache.next + 1) % kCachedAliases;
  entry.device = device;
  entry.keys = alias.key_set();
  entry.alias = alias;
  return alias;
}

DeferredCpuAlias::DeferredCpuAlias(const at::Tensor& t) {
  check_kernel_argument(t);
  *this = of_alias(t); // a device tensor's fields are its alias's
}

DeferredCpuAlias DeferredCpuAlias::of_alias(const at::Tensor& alias) {
  DeferredCpuAlias home;
  home.data_ = alias.data_ptr();
  home.defined_ = true;
  const c10::IntArrayRef sizes = alias.sizes();
  const c10::IntArrayRef strides = alias.strides();
  home.dim_ = sizes.size();
  home.layout_.reserve(2 * home.dim_);
  home.layout_.append(sizes.begin(), sizes.end());
  home.layout_.append(strides.begin(), strides.end());
  home.dtype_ = alias.scalar_type();
  home.conj_ = alias.is_conj();
  home.neg_ = alias.is_neg();
  return home;
}

at::Tensor DeferredCpuAlias::tensor() const {
  at::Tensor alias = at::for_blob(data_, sizes())
                         .strides(strides())
                         .options(at::TensorOptions().dtype(dtype_))
                         .make_tensor();
  alias._set_conj(conj_);
  alias._set_neg(neg_);
  return alias;
}

void settle(const at::Tensor& out, const DeferredCpuAlias& home) {
  if (out.data_ptr() == home.data_ptr() && out.sizes() == home.sizes() &&
      out.strides() == home.strides() && out.is_conj() == home.is_conj() &&
      out.is_neg() == home.is_neg()) {
    return;
  }
  TORCH_CHECK(out.sizes() == home.sizes(), "an out= tensor of shape ", home.sizes(),
              " received a result of shape ", out.sizes(),
              ": accinte cannot resize outputs inside a kernel; pass an output of the right "
              "shape, or one with zero elements");
  // Same memory, other layout or other conj/neg bits (linalg_lu_solve's out=
  // kernel flips the conj bit of its output in place, which the device
  // tensor cannot see): copy through a temporary, never in place.
  home.tensor().copy_(out.data_ptr() == home.data_ptr() ? out.clone() : out);
}

bool lies_in(const at::Tensor& host_view, const at::Tensor& device_tensor) {
  const auto* p = static_cast<const char*>(host_view.data_ptr());
  const auto* begin = static_cast<const char*>(device_tensor.storage().data());
  return begin != nullptr && p >= begin && p < begin + device_tensor.storage().nbytes();
}

at::Tensor device_view_of(const at::Tensor& base, const at::Tensor& host_view) {
  const auto byte_offset = static_cast<const char*>(host_view.data_ptr()) -
                           static_cast<const char*>(base.storage().data());
  TORCH_INTERNAL_ASSERT(byte_offset % static_cast<int64_t>(host_view.itemsize()) == 0);
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW,
                                                   c10::Storage(base.storage()),
                                                   base.key_set(), host_view.dtype());
  impl->set_sizes_and_strides(host_view.sizes(), host_view.strides(),
                              byte_offset / static_cast<int64_t>(host_view.itemsize()));
  at::Tensor view(std::move(impl));
  view._set_conj(host_view.is_conj());
  view._set_neg(host_view.is_neg());
  return view;
}

} // namespace at::native::accinte
