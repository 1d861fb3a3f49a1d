#include <csrc/emulation/CpuAlias.h>

#include <ATen/EmptyTensor.h>
#include <ATen/ops/from_blob.h>

#include <csrc/runtime/AccInteGraphsUtils.h>

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
at::Tensor make_alias(const at::Tensor& t, bool resizable) {
  check_kernel_argument(t);
  at::Tensor alias =
      resizable ? at::for_blob(t.data_ptr(), t.sizes())
                      .strides(t.strides())
                      .options(at::TensorOptions().dtype(t.scalar_type()))
                      .allocator(c10::GetAllocator(c10::kCPU))
                      .resizeable_storage()
                      .make_tensor()
                : at::for_blob(t.data_ptr(), t.sizes())
                      .strides(t.strides())
                      .options(at::TensorOptions().dtype(t.scalar_type()))
                      .make_tensor();
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
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

at::Tensor cpu_alias_in(const at::Tensor& t, const c10::Storage& storage) {
  check_kernel_argument(t);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  at::Tensor alias(std::move(impl));
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
  return alias;
}

DeferredCpuAlias::DeferredCpuAlias(const at::Tensor& t)
    : data_(t.data_ptr()),
      defined_(true),
      sizes_(t.sizes()),
      strides_(t.strides()),
      dtype_(t.scalar_type()),
      conj_(t.is_conj()),
      neg_(t.is_neg()) {
  check_kernel_argument(t);
}

at::Tensor DeferredCpuAlias::tensor() const {
  at::Tensor alias = at::for_blob(data_, sizes_)
                         .strides(strides_)
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
