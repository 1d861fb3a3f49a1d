// event.cpp: events (cudaEvent_t): records, queries, synchronization, timing,
// and acStreamWaitEvent.
//
// Each acEventRecord creates a fresh Completion and makes it the event's
// latest record; queries and waits always refer to the record that was latest
// when they were made. A stream told to wait queues a task that blocks its
// worker until the record completes, which works across devices since
// completions belong to no device. An interprocess event also tells other
// processes about its records: see Note [IPC events] in ipc_event.cpp.
#include "activity.h"
#include "event.h"
#include "graph.h"

#include <new>
#include <unordered_map>

namespace accinte {
namespace {

constexpr unsigned kKnownEventFlags =
    acEventDefault | acEventDisableTiming | acEventInterprocess;

// Live events by handle. Guarded by eventTableMutex().
std::unordered_map<acEvent_t, std::shared_ptr<Event>>& eventTable() {
  static auto* table = new std::unordered_map<acEvent_t, std::shared_ptr<Event>>();
  return *table;
}

// LITERALINCLUDE START: IPC EVENT STREAM WAIT
// acStreamWaitEvent for an event opened from an IPC handle: the stream waits
// for the exporter's latest record as of now. A capture cannot replay a wait
// for another process, so a capturing stream may only wait for a record
// already complete.
acError_t waitForImported(Stream& s, const std::shared_ptr<IpcEvent>& ipc) {
  const uint64_t generation = ipc->latest();
  const acError_t now = ipc->query(generation);
  if (now != acErrorNotReady) {
    return now;
  }
  if (const auto capture = s.capture()) {
    capture->invalidate();
    return acErrorStreamCaptureIsolation;
  }
  return s.enqueue([ipc, generation] { return ipc->wait(generation); }, "ipc event wait");
}
// LITERALINCLUDE END: IPC EVENT STREAM WAIT

}  // namespace

std::mutex& eventTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

acEvent_t registerEvent(std::shared_ptr<Event> event) {
  const auto handle = reinterpret_cast<acEvent_t>(event.get());
  std::lock_guard<std::mutex> lock(eventTableMutex());
  eventTable().emplace(handle, std::move(event));
  return handle;
}

acError_t resolveEvent(acEvent_t handle, std::shared_ptr<Event>* event) {
  std::lock_guard<std::mutex> lock(eventTableMutex());
  const auto it = eventTable().find(handle);
  if (it == eventTable().end()) {
    return acErrorInvalidResourceHandle;
  }
  *event = it->second;
  return acSuccess;
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
    const bool timing = (flags & acEventDisableTiming) == 0;
    std::shared_ptr<IpcEvent> ipc;
    if ((flags & acEventInterprocess) != 0) {
      if (timing) {
        return acErrorInvalidValue;  // as in CUDA: interprocess events do not time
      }
      if (const acError_t e = IpcEvent::create(currentDevice(), &ipc); e != acSuccess) {
        return e;
      }
    }
    *event = registerEvent(std::make_shared<Event>(currentDevice(), timing, std::move(ipc)));
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
    if (e->imported()) {
      return acErrorNotSupported;  // only the exporter numbers records: Note [IPC events]
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
    const auto& ipc = e->ipc();
    if (ipc == nullptr) {
      e->setLatest(s->record());
      return acSuccess;
    }
    // LITERALINCLUDE START: IPC EVENT RECORD
    // An interprocess event: its record must also reach the shared page (see
    // Note [IPC events]), which a point in a graph cannot do.
    if (const auto capture = s->capture()) {
      capture->invalidate();
      return acErrorStreamCaptureUnsupported;
    }
    auto record = s->record();
    const uint64_t generation = ipc->beginRecord();
    if (record->done()) {
      ipc->finishRecord(generation);
    } else {
      // Queued after the marker: publishes once the work before it is done.
      acError_t queued = acErrorMemoryAllocation;
      try {
        queued = s->enqueue([ipc, generation] {
          ipc->finishRecord(generation);
          return acSuccess;
        }, "ipc event record");
      } catch (const std::bad_alloc&) {
      }
      if (queued != acSuccess || s->capture() != nullptr) {
        // Not queued, or maybe taken by a capture another thread began in
        // between: publish from here once the marker is done, so that no
        // record number stays unpublished (a replayed or late publication
        // of it is then ignored, see finishRecord).
        record->wait();
        ipc->finishRecord(generation);
        if (queued != acSuccess) {
          return queued;
        }
      }
    }
    e->setLatest(std::move(record));
    return acSuccess;
    // LITERALINCLUDE END: IPC EVENT RECORD
  });
}

acError_t acEventQuery(acEvent_t event) {
  return apiCall([&] {
    std::shared_ptr<Event> e;
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    if (e->imported()) {
      return e->ipc()->query(e->ipc()->latest());
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
    if (e->imported()) {
      return e->ipc()->wait(e->ipc()->latest());
    }
    const auto record = e->latest();
    if (record == nullptr) {
      return acSuccess;
    }
    if (const auto capture = record->activeCapture()) {
      capture->invalidate();
      return acErrorStreamCaptureUnsupported;
    }
    if (!record->done()) {
      // Runs the work ahead of the record, and its marker (next in line
      // unless another thread queued in between), on this thread if nobody
      // has started it (Note [accinte a waiting host runs the queue]).
      if (const auto stream = record->stream().lock()) {
        stream->waitFor(record->ticket() + 1);
      }
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
    if (e->imported()) {
      return waitForImported(*s, e->ipc());
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
