#pragma once
// Launching host code as a kernel on an accinte stream.
//
// A kernel is a C++ callable queued with acLaunchKernel: it runs later, in
// stream order, on the stream's worker thread, inside the runtime's access
// window over device memory (so it may read and write device pointers even
// in strict mode). It must not capture owning references to device tensors:
// a tensor freed on the worker would enter the caching allocator from a
// thread that the allocator may be waiting for (acFree waits for the
// device's streams). Capture raw pointers and metadata instead; the caller
// may free the tensors as soon as the kernel is queued, because the caching
// allocator hands a freed block out again only to work queued behind the
// kernel on the same stream (see Note [accinte caching allocator]; uses on
// other streams need Tensor.record_stream).

#include <csrc/runtime/AccInteStream.h>

#include <functional>
#include <string>

namespace c10::accinte {

/// Queues `kernel` on `stream`. An exception thrown by the kernel is caught on
/// the worker, its message kept, and reported as acErrorLaunchFailure by the
/// next synchronisation with the stream (see take_kernel_error).
/// While `stream` is capturing, the kernel is recorded into the graph, which
/// owns it from then on and runs it at every replay; `name` (an operator
/// name, say) labels it in the graph's debug dump and in the profiler's
/// kernel records, so it must outlive the kernel's last run (operator schema
/// names and string literals do). See Note [accinte graphs] and Note
/// [accinte activity records] (accinte.h).
C10_EXPORT void launch_kernel(const AccInteStream& stream, std::function<void()> kernel,
                              const char* name = "kernel");

/// With ACCINTE_LAUNCH_BLOCKING=1 (read once), waits for `stream` and so
/// reports a failing kernel at its launch, like CUDA_LAUNCH_BLOCKING.
/// Called after every launch and asynchronous copy; otherwise a no-op.
C10_EXPORT void maybe_block_after_launch(const AccInteStream& stream);

/// The message of the most recent failed kernel, cleared by this call.
C10_EXPORT std::string take_kernel_error();

} // namespace c10::accinte
