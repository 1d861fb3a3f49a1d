// event.h: an event (cudaEvent_t) and its handle table (internal).
#ifndef ACCINTE_SRC_EVENT_H_
#define ACCINTE_SRC_EVENT_H_

#include "ipc_event.h"
#include "stream.h"

#include <memory>
#include <mutex>

namespace accinte {

// An event: the latest of its records, plus, for an interprocess event, its
// shared page (see Note [IPC events]). Thread-safe.
class Event {
 public:
  // `ipc`: null for a local event; the page this process exports for an
  // acEventInterprocess event; the page opened for an acIpcOpenEventHandle one.
  Event(int device, bool timing, std::shared_ptr<IpcEvent> ipc = nullptr)
      : device_(device), timing_(timing), ipc_(std::move(ipc)) {
    markInitialized();
  }

  int device() const { return device_; }
  bool timing() const { return timing_; }
  const std::shared_ptr<IpcEvent>& ipc() const { return ipc_; }
  // True for an event opened from another event's IPC handle.
  bool imported() const { return ipc_ != nullptr && ipc_->imported(); }

  // The latest record, or null if the event was never recorded (always null
  // for an imported event, whose records are the exporter's).
  std::shared_ptr<Completion> latest() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return latest_;
  }
  void setLatest(std::shared_ptr<Completion> record) {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_ = std::move(record);
  }

 private:
  const int device_;   // current device at creation; records must be on its streams
  const bool timing_;  // false with acEventDisableTiming
  const std::shared_ptr<IpcEvent> ipc_;
  mutable std::mutex mutex_;
  std::shared_ptr<Completion> latest_;
};

// Adds `event` to the table of live events and returns its handle.
acEvent_t registerEvent(std::shared_ptr<Event> event);

// Like resolveStream: handles are looked up, never dereferenced.
// acErrorInvalidResourceHandle for a handle that is not a live event.
acError_t resolveEvent(acEvent_t handle, std::shared_ptr<Event>* event);

}  // namespace accinte

#endif  // ACCINTE_SRC_EVENT_H_
