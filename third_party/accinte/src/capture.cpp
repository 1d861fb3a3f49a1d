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

// Captures begun and not yet ended (acCapturesUnderway). Raised before a
// stream's capture is set and lowered after it is cleared, so it is never
// below the number of capturing streams.
std::atomic<unsigned> gCapturesUnderway{0};

}  // namespace

std::mutex& captureTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

acError_t Capture::record(const Stream* from, const char* kind, Stream::Task task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (invalidated_) {
    return acErrorStreamCaptureInvalidated;
  }
  body_->append(GraphNode{kind, std::move(task)});
  issued_[from] += 1;
  return acSuccess;
}

// LITERALINCLUDE START: GRAPH CAPTURE FORKS
bool Capture::join(const std::shared_ptr<Stream>& stream) {
  if (!stream->beginCapture(shared_from_this())) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  forks_[stream.get()].stream = stream;
  return true;
}

uint64_t Capture::position(const Stream* stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = issued_.find(stream);
  return it == issued_.end() ? 0 : it->second;
}

void Capture::joinedBack(const Stream* stream, uint64_t position) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = forks_.find(stream); it != forks_.end()) {
    it->second.joinedUpTo = std::max(it->second.joinedUpTo, position);
  }
}

bool Capture::unjoined() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [stream, fork] : forks_) {
    const auto it = issued_.find(stream);
    if (it != issued_.end() && it->second > fork.joinedUpTo) {
      return true;
    }
  }
  return false;
}
// LITERALINCLUDE END: GRAPH CAPTURE FORKS

std::vector<std::shared_ptr<Stream>> Capture::forks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> result;
  for (const auto& entry : forks_) {
    result.push_back(entry.second.stream);
  }
  return result;
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

bool capturesUnderway() {
  return gCapturesUnderway.load(std::memory_order_acquire) != 0;
}

acError_t checkUnsafeCall(int device) {
  if (!capturesUnderway()) {
    return acSuccess;
  }
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
  if (!capturesUnderway()) {
    return acSuccess;
  }
  acError_t result = acSuccess;
  for (const auto& capture : capturesOf(device)) {
    capture->invalidate();
    result = acErrorStreamCaptureUnsupported;
  }
  return result;
}

// LITERALINCLUDE START: GRAPH CAPTURE CHECK
acError_t checkStreamNotCapturing(Stream& stream) {
  if (!capturesUnderway()) {
    return acSuccess;  // no stream captures: the stream's lock is not taken
  }
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
    const int m = callerInt(mode);  // a C caller may pass any int
    if (m < acStreamCaptureModeGlobal || m > acStreamCaptureModeRelaxed) {
      return acErrorInvalidValue;
    }
    // The default stream stands for CUDA's legacy stream, which cannot be
    // captured: code that captures there would fail on CUDA.
    if (s->isDefault()) {
      return acErrorStreamCaptureUnsupported;
    }
    auto body = std::make_shared<GraphBody>();
    // The handle createGraph will register: a graph's handle is its body.
    const auto graph = reinterpret_cast<acGraph_t>(body.get());
    auto capture = std::make_shared<Capture>(gNextCaptureId.fetch_add(1), mode, s->device(),
                                             s.get(), graph, body);
    // Counted before the stream captures, so that whoever reads 0 may
    // assume no stream is capturing (see acCapturesUnderway).
    gCapturesUnderway.fetch_add(1);
    // One step under the stream's lock: of two threads beginning at once,
    // exactly one wins; the loser has registered nothing.
    if (!s->beginCapture(capture)) {
      gCapturesUnderway.fetch_sub(1);
      return acErrorIllegalState;
    }
    try {
      (void)createGraph(std::move(body));
      std::lock_guard<std::mutex> lock(captureTableMutex());
      activeCaptures().push_back(capture);
    } catch (...) {
      // Out of host memory: undo, leaving no capture and no graph behind.
      s->clearCapture();
      capture->body()->seal();
      (void)destroyGraph(graph);
      gCapturesUnderway.fetch_sub(1);
      throw;
    }
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
    // A stream that joined a capture does not own it.
    if (capture == nullptr || capture->origin() != s.get()) {
      return acErrorStreamCaptureUnmatched;
    }
    if (capture->mode() != acStreamCaptureModeRelaxed &&
        capture->thread() != std::this_thread::get_id()) {
      return acErrorStreamCaptureWrongThread;
    }
    // The capture ends either way; a fork left hanging only makes it fail.
    const bool unjoined = !capture->invalidated() && capture->unjoined();
    if (unjoined) {
      capture->invalidate();
    }
    s->clearCapture();
    for (const auto& fork : capture->forks()) {
      fork->clearCapture();
    }
    capture->end();
    {
      std::lock_guard<std::mutex> lock(captureTableMutex());
      auto& active = activeCaptures();
      active.erase(std::remove(active.begin(), active.end(), capture), active.end());
    }
    // From here on the graph is complete: it may be instantiated, and read
    // without a lock.
    capture->body()->seal();
    gCapturesUnderway.fetch_sub(1);
    if (capture->invalidated()) {
      (void)destroyGraph(capture->graph());
      *graph = nullptr;
      return unjoined ? acErrorStreamCaptureUnjoined : acErrorStreamCaptureInvalidated;
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

// LITERALINCLUDE START: GRAPH CAPTURES UNDERWAY
unsigned int acCapturesUnderway(void) {
  // Deliberately not an apiCall: one relaxed load, callable on every launch.
  return gCapturesUnderway.load(std::memory_order_relaxed);
}
// LITERALINCLUDE END: GRAPH CAPTURES UNDERWAY

}  // extern "C"
