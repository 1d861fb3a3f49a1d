#pragma once
// Sharing accinte storages between processes: the C++ face of the runtime's
// acIpc* calls, used by torch_accinte's multiprocessing reductions.
//
// Note [Sharing across processes]
// A storage is shared as an IPC handle to the runtime allocation that holds
// it plus the storage's offset and size within that allocation (with a
// caching allocator a storage may be part of a larger allocation, as on
// CUDA). The receiver maps the allocation (acIpcOpenMemHandle) and wraps the
// storage's bytes in a non-resizable storage. Both processes then address
// the same memory. An allocation is mapped once per process while any
// storage received from it lives (unmapped, acIpcCloseMemHandle, with the
// last), as CUDA's caching allocator does for IPC handles: tensors sent from
// one segment cost the receiver one mapping and one descriptor, not one each.
//
// Ordering, as CUDA's reductions do it. Exporting records an interprocess
// event on the sender's current stream of the storage's device and sends
// its handle along (acIpcGetEventHandle); the receiver makes its own current
// stream wait for it (acIpcOpenEventHandle, acStreamWaitEvent), each time
// the storage arrives, also when it is taken from the cache. So work the
// receiver queues on its current stream sees everything the sender queued
// on its current stream before the share, and neither side's host waits:
// work on the sender's other streams is the sender's to order first (as it
// would be for a consumer in its own process). The sender keeps the event,
// like the storage, until the receiver released the share: the handle must
// stay openable while in flight. Events are cheap to hold by the thousand:
// the runtime packs them into shared pages, one descriptor per page on each
// side (Note [IPC event pages] in third_party/accinte/src/ipc_event.cpp).
// Beyond the share, each side must synchronize its own writes before
// signalling the other, as with any device memory.
//
// Lifetime. The receiver's mapping keeps the memory alive by itself (see
// Note [IPC] in third_party/accinte/src/ipc.cpp), and a reference count
// shared by both processes keeps the sender's caching allocator from handing
// the block to anyone else while a receiver holds it (see Note [IPC reference
// counts] in AccInteIPCCounters.h): the memory lives until both sides have
// released it.

#include <c10/core/Storage.h>
#include <accinte/accinte.h>

#include <csrc/runtime/AccInteEvent.h>
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
  acIpcEventHandle_t event{}; ///< recorded on the sender's current stream after the share
};

/// What the sender keeps for one share until the receiver released it.
struct IpcSentStorage {
  IpcStorageHandle handle;  ///< what travels to the receiver
  AccInteEvent event;       ///< the interprocess event handle.event names
};

/// Exports the memory of accinte storage `storage`, with an event recorded
/// on the current stream of its device (see Note [Sharing across processes];
/// does not wait for the device) and a new reference count set to 1: the
/// caller keeps `storage` and the returned event alive until
/// sent_counter_value(handle.counter) is 0, then frees the counter. Throws for a
/// storage of another device, for an empty storage (nothing to map), and
/// when the runtime refuses (memory made unshareable, see acIpcGetMemHandle;
/// acErrorIpcDescriptorsExhausted: no descriptor left for a page of events).
C10_EXPORT IpcSentStorage share_storage(const c10::Storage& storage);

/// Makes the current stream of `handle.device` wait for the sender's event
/// (without waiting on the host). Throws when the event cannot be opened
/// (the sender released it or exited). A sender that exits before the event
/// completes makes the stream report acErrorMapBufferObjectFailed at its
/// next synchronization instead of hanging.
C10_EXPORT void wait_shared_event(const IpcStorageHandle& handle);

/// A storage over the memory `handle` describes, mapped into this process
/// (which may be the exporter), after wait_shared_event(handle).
/// Not resizable; when it dies it is unmapped
/// and the handle's reference count is decremented. Throws when the memory is
/// gone (the sender freed it before this call), the device does not exist
/// here, or no descriptor is left to map it or open the event's page
/// (acErrorIpcDescriptorsExhausted); the handle's reference is released then
/// too.
C10_EXPORT c10::Storage open_shared_storage(const IpcStorageHandle& handle);

/// Gives up the reference `handle` carries without mapping anything: for a
/// receiver that already holds the storage from an earlier share.
C10_EXPORT void release_shared_reference(const IpcStorageHandle& handle);

} // namespace c10::accinte
