#pragma once
// AccInteEvent: an owning RAII wrapper of acEvent_t (the CUDAEvent of this
// backend), used by the host allocator to know when a stream is done with a
// pinned block, by the device caching allocator to know when a block freed
// with uses on other streams (record_stream) may be handed out again, by
// copies and collectives to order one stream after another, and by the IPC
// of storages to tell another process when the
// storage's work is done (an interprocess event, see Note [Sharing across
// processes]). The runtime event is created lazily, on the device of the
// first stream it is recorded on, or opened from another process's IPC
// handle. Movable, not copyable.

#include <csrc/runtime/AccInteStream.h>

namespace c10::accinte {

class C10_EXPORT AccInteEvent {
 public:
  /// An event with timing, or one that may be exported to other processes
  /// (acEventInterprocess, which excludes timing: throws if both are asked).
  explicit AccInteEvent(bool enable_timing = false, bool interprocess = false);
  /// The event another process exported as `handle` (acIpcOpenEventHandle):
  /// it can be waited for (block, synchronize, query), not recorded. Throws
  /// when the handle does not open (the exporter destroyed the event or
  /// exited, or the bytes are not a handle).
  AccInteEvent(DeviceIndex device, const acIpcEventHandle_t& handle);
  ~AccInteEvent();
  AccInteEvent(AccInteEvent&& other) noexcept;
  AccInteEvent& operator=(AccInteEvent&& other) noexcept;
  AccInteEvent(const AccInteEvent&) = delete;
  AccInteEvent& operator=(const AccInteEvent&) = delete;

  /// Captures the work queued on `stream` so far.
  void record(const AccInteStream& stream);
  /// True when never recorded, or when the captured work has finished.
  bool query() const;
  /// Blocks until the captured work has finished.
  void synchronize() const;
  /// Makes work queued on `stream` from now on wait for the captured work.
  void block(const AccInteStream& stream) const;

  /// The handle another process opens this event with (acIpcGetEventHandle).
  /// Throws unless the event is interprocess and was recorded (created).
  acIpcEventHandle_t ipc_handle() const;

  bool is_created() const { return event_ != nullptr; }
  acEvent_t event() const { return event_; }

 private:
  bool enable_timing_;
  bool interprocess_;
  DeviceIndex device_ = -1;
  acEvent_t event_ = nullptr;
};

} // namespace c10::accinte
