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

/// Formats a byte count for error messages ("1.50 GiB").
C10_EXPORT std::string format_bytes(size_t bytes);

} // namespace c10::accinte
