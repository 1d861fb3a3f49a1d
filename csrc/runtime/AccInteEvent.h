#pragma once
// AccInteEvent: an owning RAII wrapper of acEvent_t (the CUDAEvent of this
// backend), used by the host allocator to know when a stream is done with a
// pinned block. The runtime event is created lazily, on the device of the
// first stream it is recorded on. Movable, not copyable.

#include <csrc/runtime/AccInteStream.h>

namespace c10::accinte {

class C10_EXPORT AccInteEvent {
 public:
  explicit AccInteEvent(bool enable_timing = false) : enable_timing_(enable_timing) {}
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

  bool is_created() const { return event_ != nullptr; }
  acEvent_t event() const { return event_; }

 private:
  bool enable_timing_;
  DeviceIndex device_ = -1;
  acEvent_t event_ = nullptr;
};

} // namespace c10::accinte
