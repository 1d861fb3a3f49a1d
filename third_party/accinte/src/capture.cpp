// capture.cpp: stream capture (cudaStreamBeginCapture and friends) and the
// checks other calls make so that nothing waits for work that a capture
// merely recorded.
//
// While a stream captures, its Stream hands every task to the Capture
// (stream.cpp), so launches, async copies, memsets and event waits are
// recorded, not run. A call that would wait for the capturing stream could
// never see that work finish; like CUDA, such a call fails with
// acErrorStreamCaptureUnsupported and invalidates the capture, so that the
// capture cannot silently produce a graph that differs from what the program
// meant. The stream and device stay usable; acStreamEndCapture then reports
// acErrorStreamCaptureInvalidated and produces no graph.
#include "graph.h"

#include <algorithm>

namespace accinte {
namespace {

// Every active capture. Guarded by captureTableMutex().
std::vector<std::shared_ptr<Capture>>& activeCaptures() {
  static auto* table = new std::vector<std::shared_ptr<Capture>>();
  return *table;
}

std::vector<std::shared_ptr<Capture>> capturesOf(int device) {
  std::vector<std::shared_ptr<Capture>> result;
  std::lock_guard<std::mutex> lock(captureTableMutex());
  for (const auto& capture : activeCaptures()) {
    if (capture->device() == device) {
      result.push_back(capture);
    }
  }
  return result;
}

std::atomic<unsigned long long> gNextCaptureId{1};

}  // namespace

std::mutex& captureTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

acError_t Capture::record(const char* kind, Stream::Task task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (invalidated_) {
    return acErrorStreamCaptureInvalidated;
  }
  body_->append(GraphNode{kind, std::move(task)});
  return acSuccess;
}

void Capture::invalidate() {
  std::lock_guard<std::mutex> lock(mutex_);
  invalidated_ = true;
}

bool Capture::invalidated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return invalidated_;
}

void Capture::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
}

bool Capture::active() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !ended_;
}

acError_t checkUnsafeCall(int device) {
  acError_t result = acSuccess;
  for (const auto& capture : capturesOf(device)) {
    const bool forbidden =
        capture->mode() == acStreamCaptureModeGlobal ||
        (capture->mode() == acStreamCaptureModeThreadLocal &&
         capture->thread() == std::this_thread::get_id());
    if (forbidden) {
      capture->invalidate();
      result = acErrorStreamCaptureUnsupported;
    }
  }
  return result;
}

acError_t checkDeviceNotCapturing(int device) {
  acError_t result = acSuccess;
  for (const auto& capture : capturesOf(device)) {
    capture->invalidate();
    result = acErrorStreamCaptureUnsupported;
  }
  return result;
}

// LITERALINCLUDE START: GRAPH CAPTURE CHECK
acError_t checkStreamNotCapturing(Stream& stream) {
  if (const auto capture = stream.capture()) {
    capture->invalidate();
    return acErrorStreamCaptureUnsupported;
  }
  return acSuccess;
}
// LITERALINCLUDE END: GRAPH CAPTURE CHECK

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acStreamBeginCapture(acStream_t stream, acStreamCaptureMode mode) {
  return apiCall([&] {
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    const int m = static_cast<int>(mode);  // a C caller may pass any int
    if (m < acStreamCaptureModeGlobal || m > acStreamCaptureModeRelaxed) {
      return acErrorInvalidValue;
    }
    // The default stream stands for CUDA's legacy stream, which cannot be
    // captured: code that captures there would fail on CUDA.
    if (s->isDefault()) {
      return acErrorStreamCaptureUnsupported;
    }
    if (s->capture() != nullptr) {
      return acErrorIllegalState;
    }
    auto body = std::make_shared<GraphBody>();
    const acGraph_t graph = createGraph(body);
    auto capture = std::make_shared<Capture>(gNextCaptureId.fetch_add(1), mode, s->device(),
                                             graph, std::move(body));
    {
      std::lock_guard<std::mutex> lock(captureTableMutex());
      activeCaptures().push_back(capture);
    }
    s->setCapture(std::move(capture));
    return acSuccess;
  });
}

acError_t acStreamEndCapture(acStream_t stream, acGraph_t* graph) {
  return apiCall([&] {
    if (graph == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    const auto capture = s->capture();
    if (capture == nullptr) {
      return acErrorStreamCaptureUnmatched;
    }
    if (capture->mode() != acStreamCaptureModeRelaxed &&
        capture->thread() != std::this_thread::get_id()) {
      return acErrorStreamCaptureWrongThread;
    }
    s->setCapture(nullptr);
    capture->end();
    {
      std::lock_guard<std::mutex> lock(captureTableMutex());
      auto& active = activeCaptures();
      active.erase(std::remove(active.begin(), active.end(), capture), active.end());
    }
    if (capture->invalidated()) {
      (void)destroyGraph(capture->graph());
      *graph = nullptr;
      return acErrorStreamCaptureInvalidated;
    }
    *graph = capture->graph();
    return acSuccess;
  });
}

acError_t acStreamIsCapturing(acStream_t stream, acStreamCaptureStatus* status) {
  return acStreamGetCaptureInfo(stream, status, nullptr, nullptr);
}

acError_t acStreamGetCaptureInfo(acStream_t stream, acStreamCaptureStatus* status,
                                 unsigned long long* id, acGraph_t* graph) {
  return apiCall([&] {
    if (status == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    const auto capture = s->capture();
    *status = capture == nullptr      ? acStreamCaptureStatusNone
              : capture->invalidated() ? acStreamCaptureStatusInvalidated
                                       : acStreamCaptureStatusActive;
    if (id != nullptr) {
      *id = capture == nullptr ? 0 : capture->id();
    }
    if (graph != nullptr) {
      *graph = capture == nullptr ? nullptr : capture->graph();
    }
    return acSuccess;
  });
}

}  // extern "C"
