// event.cpp: events (cudaEvent_t): records, queries, synchronization, timing,
// and acStreamWaitEvent.
//
// Each acEventRecord creates a fresh Completion and makes it the event's
// latest record; queries and waits always refer to the record that was latest
// when they were made. A stream told to wait queues a task that blocks its
// worker until the record completes, which works across devices since
// completions belong to no device.
#include "activity.h"
#include "graph.h"
#include "stream.h"

#include <unordered_map>

namespace accinte {
namespace {

constexpr unsigned kKnownEventFlags = acEventDefault | acEventDisableTiming;

class Event {
 public:
  Event(int device, bool timing) : device_(device), timing_(timing) { markInitialized(); }

  int device() const { return device_; }
  bool timing() const { return timing_; }

  // The latest record, or null if the event was never recorded.
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
  mutable std::mutex mutex_;
  std::shared_ptr<Completion> latest_;
};

// Live events by handle. Guarded by eventTableMutex().
std::unordered_map<acEvent_t, std::shared_ptr<Event>>& eventTable() {
  static auto* table = new std::unordered_map<acEvent_t, std::shared_ptr<Event>>();
  return *table;
}

// Like resolveStream: handles are looked up, never dereferenced.
acError_t resolveEvent(acEvent_t handle, std::shared_ptr<Event>* event) {
  std::lock_guard<std::mutex> lock(eventTableMutex());
  const auto it = eventTable().find(handle);
  if (it == eventTable().end()) {
    return acErrorInvalidResourceHandle;
  }
  *event = it->second;
  return acSuccess;
}

}  // namespace

std::mutex& eventTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acEventCreate(acEvent_t* event) {
  return acEventCreateWithFlags(event, acEventDefault);
}

acError_t acEventCreateWithFlags(acEvent_t* event, unsigned int flags) {
  return apiCall([&] {
    if (event == nullptr || (flags & ~kKnownEventFlags) != 0) {
      return acErrorInvalidValue;
    }
    auto created = std::make_shared<Event>(currentDevice(), (flags & acEventDisableTiming) == 0);
    const auto handle = reinterpret_cast<acEvent_t>(created.get());
    {
      std::lock_guard<std::mutex> lock(eventTableMutex());
      eventTable().emplace(handle, std::move(created));
    }
    *event = handle;
    return acSuccess;
  });
}

acError_t acEventDestroy(acEvent_t event) {
  return apiCall([&] {
    // Returns at once, like cudaEventDestroy: pending records are owned by
    // their marker tasks and waiting streams, not by the event.
    std::shared_ptr<Event> doomed;
    {
      std::lock_guard<std::mutex> lock(eventTableMutex());
      const auto it = eventTable().find(event);
      if (it == eventTable().end()) {
        return acErrorInvalidResourceHandle;
      }
      doomed = std::move(it->second);
      eventTable().erase(it);
    }
    return acSuccess;
  });
}

acError_t acEventRecord(acEvent_t event, acStream_t stream) {
  return apiCall([&] {
    std::shared_ptr<Event> e;
    std::shared_ptr<Stream> s;
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    if (const acError_t err = resolveStream(stream, &s); err != acSuccess) {
      return err;
    }
    // As in CUDA, an event belongs to the device that was current when it
    // was created and can only be recorded on that device's streams.
    if (e->device() != s->device()) {
      return acErrorInvalidResourceHandle;
    }
    // On a capturing stream the record is a point in the graph, see
    // Stream::record; an invalidated capture refuses it like any launch.
    if (const auto capture = s->capture(); capture != nullptr && capture->invalidated()) {
      return acErrorStreamCaptureInvalidated;
    }
    e->setLatest(s->record());
    return acSuccess;
  });
}

acError_t acEventQuery(acEvent_t event) {
  return apiCall([&] {
    std::shared_ptr<Event> e;
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    const auto record = e->latest();
    if (record == nullptr) {
      return acSuccess;
    }
    if (const auto capture = record->activeCapture()) {
      capture->invalidate();  // it marks a point in a graph, not in time
      return acErrorStreamCaptureUnsupported;
    }
    return record->done() ? acSuccess : acErrorNotReady;
  });
}

acError_t acEventSynchronize(acEvent_t event) {
  return blockingApiCall([&] {
    const RuntimeActivity activity("acEventSynchronize", acActivityKindSynchronization);
    std::shared_ptr<Event> e;
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    const auto record = e->latest();
    if (record == nullptr) {
      return acSuccess;
    }
    if (const auto capture = record->activeCapture()) {
      capture->invalidate();
      return acErrorStreamCaptureUnsupported;
    }
    record->wait();
    // Report (and clear) a kernel failure from the work the record covers.
    if (const auto stream = record->stream().lock()) {
      return stream->takeError(record->ticket());
    }
    return acSuccess;
  });
}

acError_t acEventElapsedTime(float* ms, acEvent_t start, acEvent_t end) {
  return apiCall([&] {
    if (ms == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Event> first;
    std::shared_ptr<Event> last;
    if (const acError_t err = resolveEvent(start, &first); err != acSuccess) {
      return err;
    }
    if (const acError_t err = resolveEvent(end, &last); err != acSuccess) {
      return err;
    }
    // CUDA answers acErrorInvalidResourceHandle both for an event created
    // without timing and for one never recorded.
    if (!first->timing() || !last->timing()) {
      return acErrorInvalidResourceHandle;
    }
    const auto from = first->latest();
    const auto to = last->latest();
    if (from == nullptr || to == nullptr) {
      return acErrorInvalidResourceHandle;
    }
    if (!from->done() || !to->done()) {
      return acErrorNotReady;
    }
    *ms = std::chrono::duration<float, std::milli>(to->time() - from->time()).count();
    return acSuccess;
  });
}

acError_t acStreamWaitEvent(acStream_t stream, acEvent_t event, unsigned int flags) {
  return apiCall([&] {
    if (flags != 0) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Stream> s;
    std::shared_ptr<Event> e;
    if (const acError_t err = resolveStream(stream, &s); err != acSuccess) {
      return err;
    }
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    // The record latest *now*; later records of the event do not matter.
    auto record = e->latest();
    if (record == nullptr) {
      return acSuccess;  // nothing to wait for
    }
    // A capturing stream may wait for a point in its own capture (ordered by
    // the capture already: a no-op, which joins back the stream that made
    // the record) or for finished work. A stream outside any capture that
    // waits for a point in one joins it (a fork), if it can. Anything else
    // mixes a capture with work outside it.
    const auto waiterCapture = s->capture();
    const auto recordCapture = record->activeCapture();
    if (recordCapture != nullptr || waiterCapture != nullptr) {
      if (recordCapture == waiterCapture) {
        const auto maker = record->stream().lock();
        if (maker != nullptr && maker != s) {
          recordCapture->joinedBack(maker.get(), record->ticket());
        }
        return acSuccess;
      }
      if (recordCapture == nullptr && record->done()) {
        return acSuccess;
      }
      if (waiterCapture == nullptr && !s->isDefault() &&
          s->device() == recordCapture->device() && recordCapture->join(s)) {
        return acSuccess;
      }
      for (const auto& capture : {waiterCapture, recordCapture}) {
        if (capture != nullptr) {
          capture->invalidate();
        }
      }
      return acErrorStreamCaptureIsolation;
    }
    if (record->done()) {
      return acSuccess;
    }
    return s->enqueue([record = std::move(record)] {
      record->wait();
      return acSuccess;
    }, "event wait");
  });
}

}  // extern "C"
