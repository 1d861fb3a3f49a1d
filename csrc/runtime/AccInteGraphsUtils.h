#pragma once
// Graph-capture queries: whether a stream is capturing, the error of host code
// that would wait for captured work, and the calls through which launches,
// kernel arguments and random engines reach the graph that captures them.
// The counterpart of c10/cuda/CUDAGraphsC10Utils.h: it depends on streams and
// the runtime only, so the kernels, allocators, error conversion and the
// engine include it rather than the graph class (AccInteGraph.h). The
// queries live in AccInteGraphsUtils.cpp; the note_* calls are defined in
// AccInteGraph.cpp, next to the registry of capturing graphs they feed, so
// the generator and the launch path do not include the graph class but do
// call into it at link time. See Note [accinte graphs].

#include <csrc/runtime/AccInteStream.h>

#include <c10/core/Storage.h>
#include <c10/util/intrusive_ptr.h>

namespace at {
struct Generator;
} // namespace at

namespace c10::accinte {

struct AccInteGeneratorImpl;

/// The runtime's id of a capture (nonzero), as acStreamGetCaptureInfo gives.
using CaptureId_t = unsigned long long;

/// True while some stream of the process may be capturing: false means none
/// is. One relaxed atomic load in the runtime (acCapturesUnderway); the
/// functions below answer from it alone in the common case, so they cost
/// next to nothing on the launch path while nothing captures.
C10_EXPORT bool captures_underway();

/// The id of `stream`'s capture (also when invalidated), or 0.
C10_EXPORT CaptureId_t current_capture_id(const AccInteStream& stream);

/// True while `stream` is capturing (torch.accinte.is_current_stream_capturing
/// asks about the current stream). Thread-safe; one atomic load when no
/// capture is underway in the process.
C10_EXPORT bool is_stream_capturing(const AccInteStream& stream);

/// For a call that cannot be captured and finds `stream` capturing (`what`
/// names it for the user): remembers `what` as the cause (capture_end names
/// it) and has the runtime invalidate the capture. The caller then throws its
/// own error. Throws if the runtime unexpectedly let the host wait.
C10_EXPORT void invalidate_capture(const AccInteStream& stream, const char* what);

/// For host code that waits for `stream` (`what` names it for the user, e.g.
/// "Tensor.item()"): if the stream is capturing, invalidates the capture and
/// throws an error saying that synchronization is not allowed while
/// capturing. No-op otherwise (one atomic load when nothing captures).
/// Callers that build `what` at run time test is_stream_capturing first, so
/// that the common case formats nothing.
C10_EXPORT void check_not_capturing(const AccInteStream& stream, const char* what);

/// Remembers `what` as the cause of the invalidation of the capture of
/// `stream`, for capture_end's error; the first cause is kept.
void note_capture_invalidated(const AccInteStream& stream, const char* what);

/// Called by launch_kernel for a kernel captured by capture `id`: names it in
/// the graph's debug dump.
void note_captured_kernel(CaptureId_t id, const char* name);

/// Called for every device tensor a kernel reads or writes (cpu_alias and the
/// copies), on the launching thread: if the current stream of the storage's
/// device is capturing for an AccInteGraph, that graph keeps the storage
/// alive until reset, unless the graph's own pool allocated it. See Note
/// [accinte graph argument lifetime]. One atomic load when nothing captures.
C10_EXPORT void note_captured_storage(const c10::Storage& storage);

/// Called by AccInteGeneratorImpl::next_kernel_engine during capture `id`:
/// the graph seeds `engine` at each replay. False if no AccInteGraph owns the
/// capture (a capture begun directly through the runtime).
bool note_random_engine(CaptureId_t id, c10::intrusive_ptr<AccInteGeneratorImpl> generator,
                        at::Generator engine);

} // namespace c10::accinte
