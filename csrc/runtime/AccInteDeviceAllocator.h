#pragma once
// AccInteDeviceAllocator: the c10::DeviceAllocator behind every accinte
// tensor's storage (REGISTER_ALLOCATOR(PrivateUse1, ...)), and the C++ face of
// torch.accinte's memory functions.
//
// A facade: it routes each request to the DeviceCachingAllocator of the
// current device (AccInteCachingAllocator.h, Note [accinte caching
// allocator]), remembers which block each pointer belongs to, and gathers
// allocation contexts for memory history (AccInteMemorySnapshot.h). Nothing
// here takes the GIL, except the context recorder that the Python bindings
// may install while memory history is recorded.

#include <c10/core/CachingDeviceAllocator.h>
#include <csrc/runtime/AccInteMemorySnapshot.h>
#include <csrc/runtime/AccInteStream.h>

#include <functional>
#include <string>

namespace c10::accinte {

/// Stable, process-wide allocator instance (never destroyed).
C10_EXPORT c10::DeviceAllocator* getDeviceAllocator();

/// Caps the memory the allocator may reserve on `device` at
/// fraction * capacity; allocations beyond it raise torch.OutOfMemoryError
/// (torch.accinte.set_per_process_memory_fraction). Throws unless
/// 0 <= fraction <= 1 and the device exists.
C10_EXPORT void set_memory_fraction(double fraction, DeviceIndex device);

/// The fraction set by set_memory_fraction (1.0 until then).
C10_EXPORT double get_memory_fraction(DeviceIndex device);

/// Starts, changes or stops memory history recording for every device (see
/// Note [accinte memory history]); with `clear_history`, drops the traces
/// recorded so far.
C10_EXPORT void record_history(HistorySettings settings, bool clear_history);

/// Every segment of every device, and each device's trace. Records a
/// "snapshot" entry in each trace that is being recorded.
C10_EXPORT SnapshotInfo snapshot();

/// Graph memory (see Note [accinte graph memory]): until
/// end_allocate_to_pool, allocations on `device` whose stream satisfies
/// `filter` come from private pool `id` (CUDACachingAllocator's
/// beginAllocateToPool).
C10_EXPORT void begin_allocate_to_pool(DeviceIndex device, MempoolId_t id,
                                       std::function<bool(const AccInteStream&)> filter);
/// Ends the begin_allocate_to_pool of pool `id` on `device` (at capture end
/// or when a capture is abandoned): allocations go to the ordinary pools
/// again, and the pool keeps what it holds until release_pool. An internal
/// assertion fails if no allocation to `id` is underway on `device`.
C10_EXPORT void end_allocate_to_pool(DeviceIndex device, MempoolId_t id);
/// A graph using pool `id` is gone; the last one releases the pool, whose
/// memory empty_cache then returns once it is free.
C10_EXPORT void release_pool(DeviceIndex device, MempoolId_t id);
/// Bytes private pool `id` of `device` holds (0 if it has none).
C10_EXPORT size_t pool_reserved_bytes(DeviceIndex device, MempoolId_t id);

/// torch.accinte.MemPool: creates private pool `id` on `device` with a use
/// count of 1 (a free block of a `use_on_oom` pool serves allocations that
/// found no room elsewhere; a `no_split` pool never splits its blocks), or
/// takes one more use of a live one. Throws if every user released it.
C10_EXPORT void create_or_incref_pool(DeviceIndex device, MempoolId_t id, bool use_on_oom,
                                      bool no_split);
/// Users holding pool `id` of `device` (0 if it has none or was released).
C10_EXPORT int pool_use_count(DeviceIndex device, MempoolId_t id);
/// Returns the free segments of pool `id` of `device` to the runtime once
/// every user has released it; does nothing while it is in use.
C10_EXPORT void empty_pool_cache(DeviceIndex device, MempoolId_t id);

/// True if `ptr` is the start of a block this allocator handed out from the
/// private pool `id` (a graph's). Takes the allocator's block-map lock.
C10_EXPORT bool allocated_in_pool(const void* ptr, MempoolId_t id);

/// Formats a byte count for error messages ("1.50 GiB").
C10_EXPORT std::string format_bytes(size_t bytes);

} // namespace c10::accinte
