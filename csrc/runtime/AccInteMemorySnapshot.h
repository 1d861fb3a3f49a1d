#pragma once
// Memory history: what the caching allocator remembers so that a snapshot can
// say who allocated each block and what happened in which order (the data
// behind torch.accinte.memory._record_memory_history / _snapshot and
// PyTorch's memory visualiser). See Note [accinte memory history].
//
// The .cpp also holds DeviceCachingAllocator's snapshot() and record_trace(),
// the allocator's side of history. This file has no Python in it. Stack
// frames come from a ContextRecorder that the Python bindings install; the
// core only stores the opaque c10::GatheredContext objects it returns.

#include <c10/core/CachingDeviceAllocator.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {

// Note [accinte memory history]
// Recording has two independent parts, as in CUDA's caching allocator:
//   - the *trace*: a per-device ring buffer of TraceEntry (alloc,
//     free_requested, free_completed, segment_alloc, segment_free, oom,
//     snapshot), kept only while history is enabled with "all";
//   - the *context*: a GatheredContext (a stack) attached to each allocated
//     block and, depending on RecordContext, to trace entries.
// Contexts are gathered by calling the recorder *before* the allocator takes
// its lock: the Python recorder takes the GIL, and a thread holding the GIL
// may be waiting for the allocator lock. Dropping a context never needs the
// GIL (torch's CapturedTraceback defers freeing Python frames).

using c10::CachingDeviceAllocator::RecordContext;
using c10::CachingDeviceAllocator::SegmentInfo;
using c10::CachingDeviceAllocator::TraceEntry;

/// Returns the current stack as an opaque context; may take the GIL.
using ContextRecorder = std::function<std::shared_ptr<c10::GatheredContext>()>;

/// What a snapshot holds: every segment of every device, and each device's
/// trace, oldest entry first.
struct SnapshotInfo {
  std::vector<SegmentInfo> segments;
  std::vector<std::vector<TraceEntry>> device_traces;
};

/// Process-wide recording settings. Thread-safe.
struct HistorySettings {
  /// Keep a trace of allocator actions (enabled="all").
  bool record_trace = false;
  /// Which contexts to keep (NEVER when history is off).
  RecordContext when = RecordContext::NEVER;
  /// Ring buffer capacity per device.
  size_t max_entries = 0;
  /// Called to capture a context; empty means "no stacks".
  ContextRecorder recorder;
};

/// Replaces the process-wide settings. Does not touch recorded data.
C10_EXPORT void set_history_settings(HistorySettings settings);

/// True when a trace is being recorded.
C10_EXPORT bool history_records_trace();

/// Calls the recorder when the settings keep contexts at `level` or finer,
/// otherwise returns nullptr. Must be called without any allocator lock held.
C10_EXPORT std::shared_ptr<c10::GatheredContext> gather_context(RecordContext level);

/// One device's trace ring buffer. Not thread-safe: the owning device
/// allocator calls it under its own lock.
class TraceBuffer {
 public:
  /// Appends an entry when a trace is being recorded, overwriting the oldest
  /// one once max_entries are kept. `context` is kept only when the settings
  /// record contexts at `level`.
  void record(TraceEntry::Action action, DeviceIndex device, size_t addr, size_t size,
              void* stream, std::shared_ptr<c10::GatheredContext> context,
              RecordContext level);
  /// The kept entries, oldest first.
  std::vector<TraceEntry> entries() const;
  void clear();

 private:
  std::vector<TraceEntry> entries_;
  size_t next_ = 0; // slot the next entry overwrites once the buffer is full
};

} // namespace c10::accinte
