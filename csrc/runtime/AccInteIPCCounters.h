#pragma once
// Cross-process reference counts for shared accinte storages.
//
// Note [IPC reference counts]
// The runtime keeps shared memory mapped for as long as a receiver holds it
// (Note [IPC] in third_party/accinte/src/ipc.cpp), but the sender's caching
// allocator knows nothing of receivers: once the sender drops its tensor, the
// block would go back to the cache and be handed to the sender's next
// allocation while a receiver still reads and writes it. So, as PyTorch does
// for CUDA (torch/csrc/CudaIPCTypes.cpp), every share carries a counter that
// lives in memory both processes map:
//   - the sender sets it to 1 when it shares (the receiver's reference, held
//     for it while the handle is in flight) and keeps its storage alive;
//   - the receiver decrements it when its storage dies (or at once, when it
//     already holds the same storage from an earlier share);
//   - the sender lets go of a storage whose counter reached 0
//     (torch.accinte.ipc_collect, run at every share and by empty_cache).
// A receiver that dies without releasing leaves its count behind and the
// sender keeps the block until it exits, which is also CUDA's behaviour; so
// does a handle that is pickled but never unpickled.
//
// The counters of a process live in memfds of kSlotsPerFile 64-bit slots,
// reached by receivers through /proc/<pid>/fd like the runtime's handles, so
// they, too, can only be opened while the sender is alive (when the memory
// handle travelling with them can be opened at all).

#include <c10/macros/Export.h>

#include <atomic>
#include <cstdint>

namespace c10::accinte {

/// Names one counter slot in the memory of the process that shared. Plain
/// data, the same in every process.
struct IpcCounterHandle {
  int32_t pid = 0;     ///< the sharing process
  int32_t fd = -1;     ///< its descriptor of the counters' memfd
  uint64_t nonce = 0;  ///< tells the memfd apart from a reused descriptor number
  uint32_t slot = 0;   ///< index of the 64-bit counter in that file
  uint32_t unused = 0;
};

/// Sender: a free counter set to 1. Throws when no shared memory can be made.
C10_EXPORT IpcCounterHandle new_sent_counter();

/// Sender: the counter's value (receivers still holding the storage).
C10_EXPORT int64_t sent_counter_value(const IpcCounterHandle& handle);

/// Sender: returns a counter whose value is 0 to the free slots.
C10_EXPORT void free_sent_counter(const IpcCounterHandle& handle);

/// Receiver: gives one reference back, never taking the count below zero. A
/// share carries exactly one reference, but the same pickled message can be
/// loaded twice (two receivers, or one receiver loading it again); the second
/// release then finds 0 and changes nothing, so the count stays meaningful
/// for ipc_collect and later shares of the slot.
C10_EXPORT void release_reference(std::atomic<int64_t>& counter);

/// Receiver: the counter in this process's mapping of the sender's counters,
/// mapped on first use. Throws when the sender's counters cannot be opened
/// (the sender exited) or the handle is malformed.
C10_EXPORT std::atomic<int64_t>* received_counter(const IpcCounterHandle& handle);

} // namespace c10::accinte
