#include <csrc/core/AccInteStorageImpl.h>

#include <atomic>

namespace c10::accinte {
namespace {

uint64_t next_serial() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

// LITERALINCLUDE START: STORAGE FACTORY
// The factory c10::make_storage_impl calls for PrivateUse1 storages. PyTorch
// passes a null data_ptr when it wants the storage to allocate its own
// memory, as StorageImpl's allocating constructor would.
c10::intrusive_ptr<c10::StorageImpl> make_accinte_storage_impl(
    c10::StorageImpl::use_byte_size_t use_byte_size, c10::SymInt size_bytes,
    c10::DataPtr data_ptr, c10::Allocator* allocator, bool resizable) {
  if (data_ptr.get() == nullptr) {
    TORCH_CHECK(allocator != nullptr,
                "Cannot create an accinte storage without memory or an allocator");
    const int64_t nbytes =
        size_bytes.is_heap_allocated() ? 0 : size_bytes.as_int_unchecked();
    data_ptr = allocator->allocate(static_cast<size_t>(nbytes));
  }
  return c10::make_intrusive<AccInteStorageImpl>(use_byte_size, std::move(size_bytes),
                                                 std::move(data_ptr), allocator, resizable);
}

// Registered once the library is loaded. See Note [Custom storage].
const bool g_storage_impl_registered = [] {
  c10::SetStorageImplCreate(c10::DeviceType::PrivateUse1, &make_accinte_storage_impl);
  return true;
}();
// LITERALINCLUDE END: STORAGE FACTORY

} // namespace

AccInteStorageImpl::AccInteStorageImpl(use_byte_size_t use_byte_size, c10::SymInt size_bytes,
                                       c10::DataPtr data_ptr, c10::Allocator* allocator,
                                       bool resizable)
    : c10::StorageImpl(use_byte_size, std::move(size_bytes), std::move(data_ptr), allocator,
                       resizable),
      serial_(next_serial()) {}

const AccInteStorageImpl* as_accinte_storage(const c10::Storage& storage) {
  return dynamic_cast<const AccInteStorageImpl*>(storage.unsafeGetStorageImpl());
}

} // namespace c10::accinte
