#include <csrc/runtime/AccInteGraphsUtils.h>

#include <csrc/runtime/AccInteException.h>

namespace c10::accinte {

// LITERALINCLUDE START: GRAPH CAPTURING FAST PATH
bool captures_underway() {
  return acCapturesUnderway() != 0;
}

CaptureId_t current_capture_id(const AccInteStream& stream) {
  if (C10_LIKELY(!captures_underway())) {
    return 0;
  }
  acStreamCaptureStatus status = acStreamCaptureStatusNone;
  CaptureId_t id = 0;
  ACCINTE_CHECK(acStreamGetCaptureInfo(stream.stream(), &status, &id, nullptr));
  return id;
}

bool is_stream_capturing(const AccInteStream& stream) {
  if (C10_LIKELY(!captures_underway())) {
    return false;
  }
  acStreamCaptureStatus status = acStreamCaptureStatusNone;
  ACCINTE_CHECK(acStreamIsCapturing(stream.stream(), &status));
  return status != acStreamCaptureStatusNone;
}
// LITERALINCLUDE END: GRAPH CAPTURING FAST PATH

// LITERALINCLUDE START: GRAPH SYNC CHECK
void check_not_capturing(const AccInteStream& stream, const char* what) {
  if (current_capture_id(stream) == 0) {
    return;
  }
  note_capture_invalidated(stream, what);
  // The runtime refuses to wait for a capturing stream and invalidates the
  // capture, as it would for any caller: capture_end then fails too.
  const acError_t refused = acStreamSynchronize(stream.stream());
  TORCH_CHECK(refused != acSuccess, "accinte: the runtime let ", what, " wait for ", stream,
              " while it was capturing");
  TORCH_CHECK(false, "accinte: ", what, " waits for the work queued on ", stream,
              ", but that stream is capturing a graph: synchronization is not allowed while "
              "capturing, since captured work has not run. Move it out of the captured region "
              "(the capture is invalidated: capture_end() will fail).");
}
// LITERALINCLUDE END: GRAPH SYNC CHECK

} // namespace c10::accinte
