#pragma once
// Sharing accinte storages between processes: the C++ face of the runtime's
// acIpc* calls, used by torch_accinte's multiprocessing reductions.
//
// Note [Sharing across processes]
// A storage is shared as an IPC handle to the runtime allocation that holds
// it plus the storage's offset and size within that allocation (with a
// caching allocator a storage may be part of a larger allocation, as on
// CUDA). The receiver maps the allocation (acIpcOpenMemHandle) and wraps the
// storage's bytes in a non-resizable storage whose deleter unmaps it
// (acIpcCloseMemHandle). Both processes then address the same memory.
//
// Ordering. Exporting waits for every stream of the storage's device, so the
// receiver sees all work queued before the export; this replaces the IPC
// event CUDA's reductions send along. After that, each side must synchronize
// its own writes before signalling the other, as with any device memory.
//
// Lifetime. The receiver's mapping keeps the memory alive by itself (see
// Note [IPC] in third_party/accinte/src/ipc.cpp), and a reference count
// shared by both processes keeps the sender's caching allocator from handing
// the block to anyone else while a receiver holds it (see Note [IPC reference
// counts] in AccInteIPCCounters.h): the memory lives until both sides have
// released it.

#include <c10/core/Storage.h>
#include <accinte/accinte.h>

#include <csrc/runtime/AccInteIPCCounters.h>

#include <cstddef>

namespace c10::accinte {

/// Everything a process needs to map a shared storage.
struct IpcStorageHandle {
  acIpcMemHandle_t handle{};  ///< the runtime allocation holding the storage
  DeviceIndex device = -1;    ///< the storage's device
  size_t offset = 0;          ///< bytes from the allocation's base to the storage's data
  size_t nbytes = 0;          ///< the storage's size
  IpcCounterHandle counter;   ///< the receiver's reference, held by the sender until released
};

/// Exports the memory of accinte storage `storage` after waiting for its
/// device's queued work (see Note [Sharing across processes]), with a new
/// reference count set to 1: the caller keeps `storage` alive until
/// sent_counter_value(handle.counter) is 0, then frees the counter. Throws for a
/// storage of another device, for an empty storage (nothing to map), and
/// when the runtime refuses (memory made unshareable, see acIpcGetMemHandle).
C10_EXPORT IpcStorageHandle share_storage(const c10::Storage& storage);

/// A storage over the memory `handle` describes, mapped into this process
/// (which may be the exporter). Not resizable; when it dies it is unmapped
/// and the handle's reference count is decremented. Throws when the memory is
/// gone (the sender freed it before this call) or the device does not exist
/// here; the handle's reference is released then too.
C10_EXPORT c10::Storage open_shared_storage(const IpcStorageHandle& handle);

/// Gives up the reference `handle` carries without mapping anything: for a
/// receiver that already holds the storage from an earlier share.
C10_EXPORT void release_shared_reference(const IpcStorageHandle& handle);

} // namespace c10::accinte
