// Kernels of the minimal operator set, except copies (Copy.cpp).
#include <csrc/aten/native/Minimal.h>

#include <ATen/Dispatch_v2.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorOptions.h>

#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

namespace at::native::accinte {

using c10::accinte::AccInteGuard;

namespace {

constexpr c10::DispatchKeySet kAccInteKeys(c10::DispatchKey::PrivateUse1);

c10::DeviceIndex index_of(std::optional<c10::Device> device) {
  const c10::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.is_privateuseone(), "Expected an accinte device, got ", d);
  return d.index(); // -1 ("accinte" with no index) means the current device
}

// LITERALINCLUDE START: STORAGE NEW TENSOR
// A one-dimensional empty tensor over a new storage of `nbytes` on the
// current device. The storage comes from c10::make_storage_impl, so it is an
// AccInteStorageImpl (see Note [Custom storage]); at::detail::empty_generic
// would construct a plain c10::StorageImpl and bypass the backend's factory.
at::Tensor new_accinte_tensor(size_t nbytes, c10::ScalarType dtype) {
  c10::Storage storage(c10::make_storage_impl(
      c10::StorageImpl::use_byte_size_t(), static_cast<int64_t>(nbytes), c10::DataPtr(),
      c10::accinte::getDeviceAllocator(), /*resizable=*/true,
      c10::Device(c10::DeviceType::PrivateUse1, c10::accinte::current_device())));
  return at::detail::make_tensor<c10::TensorImpl>(std::move(storage), kAccInteKeys,
                                                   c10::scalarTypeToTypeMeta(dtype));
}
// LITERALINCLUDE END: STORAGE NEW TENSOR

// The warning every device's empty kernel gives for complex32 (the CPU's and
// CUDA's through at::detail::empty_generic, whose helper is not exported):
// the same text, once per process unless torch.set_warn_always(True).
void warn_if_complex_half(c10::ScalarType dtype) {
  if (dtype == c10::kComplexHalf) {
    TORCH_WARN_ONCE("ComplexHalf support is experimental and many operators don't support it "
                    "yet.");
  }
}

// Grows the storage of `self` so that it covers its sizes, strides and
// offset; never shrinks it (the CPU rule).
void ensure_storage_fits(at::TensorImpl* self) {
  if (self->numel() == 0) {
    return;
  }
  const size_t needed = at::detail::computeStorageNbytes(
      self->sizes(), self->strides(), self->dtype().itemsize(), self->storage_offset());
  const c10::Storage& storage = self->unsafe_storage();
  if (needed > storage.nbytes()) {
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(storage, needed);
  }
}

} // namespace

// LITERALINCLUDE START: EMPTY.MEMORY_FORMAT
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device, std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "accinte supports only strided tensors, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "Only CPU tensors can be pinned");
  AccInteGuard guard(index_of(device));
  at::detail::check_size_nonnegative(size);
  const c10::ScalarType scalar_type = c10::dtype_or_default(dtype);
  warn_if_complex_half(scalar_type);
  at::Tensor tensor = new_accinte_tensor(
      at::detail::computeStorageNbytesContiguous(size, c10::elementSize(scalar_type)),
      scalar_type);
  if (size.size() != 1 || size[0] != 0) { // a fresh TensorImpl already has sizes [0]
    tensor.unsafeGetTensorImpl()->set_sizes_contiguous(size);
  }
  tensor.unsafeGetTensorImpl()->empty_tensor_restride(
      memory_format.value_or(c10::MemoryFormat::Contiguous));
  return tensor;
}
// LITERALINCLUDE END: EMPTY.MEMORY_FORMAT

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "accinte supports only strided tensors, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "Only CPU tensors can be pinned");
  AccInteGuard guard(index_of(device));
  at::detail::check_size_nonnegative(size);
  const c10::ScalarType scalar_type = c10::dtype_or_default(dtype);
  warn_if_complex_half(scalar_type);
  at::Tensor tensor = new_accinte_tensor(
      at::detail::computeStorageNbytes(size, stride, c10::elementSize(scalar_type)),
      scalar_type);
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride);
  return tensor;
}

// Views only rewrite metadata, so the CPU implementations are device-neutral.
at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor _reshape_alias(const at::Tensor& self, c10::IntArrayRef size,
                          c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  // Sizes first (without touching storage: the CPU path would memcpy device
  // memory from the host), then grow the storage through the runtime.
  at::native::resize_impl_cpu_(impl, size, /*stride=*/std::nullopt, /*resize_storage=*/false);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(impl);
  return self;
}

at::Tensor& set_source_Storage(at::Tensor& self, c10::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_Storage_storage_offset(at::Tensor& self, c10::Storage source,
                                              int64_t storage_offset, c10::IntArrayRef size,
                                              c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, std::move(source), storage_offset, size, stride);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  at::OptionalIntArrayRef stride_opt =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  at::native::resize_impl_cpu_(impl, size, stride_opt, /*resize_storage=*/false);
  ensure_storage_fits(impl);
  return self;
}

at::Tensor& set_source_Tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Scalar _local_scalar_dense(const at::Tensor& self) {
  at::Scalar result;
  AT_DISPATCH_V2(
      self.scalar_type(), "_local_scalar_dense_accinte", AT_WRAP([&] {
        scalar_t value{};
        AccInteGuard guard(self.device().index());
        const c10::accinte::AccInteStream stream = c10::accinte::getCurrentAccInteStream();
        c10::accinte::check_not_capturing(stream, "Tensor.item() (aten::_local_scalar_dense)");
        const acStream_t handle = stream.stream();
        // Waits for the current stream, not the whole device, like .item()
        // on CUDA (cudaMemcpyAsync into pageable memory, which waits for the
        // stream and copies: Note [accinte copies into pageable memory]; then
        // cudaStreamSynchronize, which reports earlier kernels' errors).
        acError_t copied = acSuccess;
        acError_t synchronized = acSuccess;
        {
          // Both wait: Note [accinte host waits and the GIL]. One release of
          // the GIL for the two.
          c10::accinte::HostWaitGuard no_gil;
          copied = acMemcpyAsync(&value, self.const_data_ptr<scalar_t>(), sizeof(scalar_t),
                                 acMemcpyDeviceToHost, handle);
          if (copied == acSuccess) {
            synchronized = acStreamSynchronize(handle);
          }
        }
        ACCINTE_CHECK(copied);
        c10::accinte::release_finished_kernels();
        ACCINTE_CHECK(synchronized);
        result = at::Scalar(value);
      }),
      AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), kComplexHalf, kHalf, kBool, kBFloat16,
      AT_EXPAND(AT_FLOAT8_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  return result;
}

} // namespace at::native::accinte
