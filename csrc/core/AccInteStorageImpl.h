#pragma once
// AccInteStorageImpl: the c10::StorageImpl of every accinte storage.
//
// Note [Custom storage]
// PyTorch lets exactly one backend, PrivateUse1, choose the StorageImpl class
// of its storages: c10::SetStorageImplCreate registers a factory that
// c10::make_storage_impl calls whenever PyTorch creates a storage for the
// device (tensor factories, torch.UntypedStorage(..., device="accinte"),
// deserialization). A vendor uses the subclass to keep device-private facts
// about the memory with the memory itself, e.g. the physical layout a
// tensor's bytes were written in, which views and shared storages then agree
// on. Here the private field is a serial number: a process-unique id given
// to each storage at creation, the handle a vendor's tracing or memory
// tooling would key on. It survives what keeps the storage (views, set_,
// resize_, sharing) and is new for every new storage.

#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>

#include <cstdint>

namespace c10::accinte {

// LITERALINCLUDE START: STORAGE CLASS
struct C10_EXPORT AccInteStorageImpl final : public c10::StorageImpl {
  /// Wraps `data_ptr` (allocated by `allocator`) as a storage of `size_bytes`.
  AccInteStorageImpl(use_byte_size_t use_byte_size, c10::SymInt size_bytes,
                     c10::DataPtr data_ptr, c10::Allocator* allocator, bool resizable);

  /// Process-unique, increasing id given at creation (never 0).
  uint64_t serial() const { return serial_; }

 private:
  const uint64_t serial_;
};
// LITERALINCLUDE END: STORAGE CLASS

/// The AccInteStorageImpl behind `storage`, or nullptr if the storage was not
/// made by this backend's factory (e.g. created before the library loaded).
C10_EXPORT const AccInteStorageImpl* as_accinte_storage(const c10::Storage& storage);

} // namespace c10::accinte
