#pragma once
// Launching host code as a kernel on an accinte stream.
//
// A kernel is a C++ callable queued with acLaunchKernel: it runs later, in
// stream order, on the stream's worker thread (or on a host thread that
// waits for the stream: Note [accinte a waiting host runs the queue]),
// inside the runtime's access window over device memory (so it may read and
// write device pointers even in strict mode). It does not capture owning
// references to device tensors:
// their memory would stay allocated until a host thread releases the
// closure (see the Note below), and nothing needs it to. Capture raw pointers
// and metadata instead; the caller may free the tensors as soon as the
// kernel is queued, because the caching allocator hands a freed block out
// again only to work queued behind the kernel on the same stream (see Note
// [accinte caching allocator]; uses on other streams need
// Tensor.record_stream).
//
// Note [accinte kernels release on the host]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// What a kernel's closure owns (host tensors, IValues) may be the last
// reference to an object whose Python twin C++ keeps alive; destroying it
// takes the GIL. On a stream worker that deadlocks against a host thread
// that waits for the stream holding the GIL. So a worker never destroys a
// closure: a finished kernel's closure goes to a queue that host threads
// drain (release_finished_kernels) at the next launch or synchronisation, as
// CUDA's caching allocator frees on the host. Not at queries, which PyTorch's
// allocators make under their locks: a Python destructor there could wait
// for the GIL held by a thread that waits for the lock. A kernel must
// therefore not consume what it captured either (a boxed call pops its
// arguments: call it on a copy of the captured stack).
//
// It is also faster. Dropping on the worker the CPU aliases a launch made
// (they own no memory and no Python object, so it would be safe) made a
// small op 2.2 times slower: glibc's per-thread caches never get back the
// blocks the host allocated, so every host allocation goes to the shared
// arena and every worker free of a host block to its lock.

#include <csrc/runtime/AccInteStream.h>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace c10::accinte {

class RetiredKernels;

/// A kernel's closure: the callable and the link that retires it once run
/// (Note [accinte kernels release on the host]), in one allocation.
/// launch_kernel makes one from any callable.
class KernelClosure {
 public:
  virtual ~KernelClosure() = default;
  /// Runs the kernel's body, on the thread running the stream's work; may throw.
  virtual void run() = 0;

 private:
  friend class RetiredKernels;
  KernelClosure* next_retired_ = nullptr;
};

namespace detail {
template <typename Fn>
class KernelClosureOf final : public KernelClosure {
 public:
  template <typename... Args>
  explicit KernelClosureOf(std::in_place_t /*unused*/, Args&&... args)
      : fn_(std::forward<Args>(args)...) {}
  void run() override { fn_(); }
  Fn& function() { return fn_; }

 private:
  Fn fn_;
};
} // namespace detail

/// Queues `kernel` on `stream`. An exception thrown by the kernel is caught on
/// the worker, its message kept, and reported as acErrorLaunchFailure by the
/// next synchronisation with the stream (see take_kernel_error).
/// While `stream` is capturing, the kernel is recorded into the graph, which
/// owns it from then on and runs it at every replay; `name` (an operator
/// name, say) labels it in the graph's debug dump and in the profiler's
/// kernel records, so it must outlive the kernel's last run (operator schema
/// names and string literals do). See Note [accinte graphs] and Note
/// [accinte activity records] (accinte.h).
C10_EXPORT void launch_kernel(const AccInteStream& stream, std::unique_ptr<KernelClosure> kernel,
                              const char* name = "kernel");

/// launch_kernel for any callable `kernel` (a lambda, say), moved into a
/// KernelClosure: the launch's one allocation.
template <typename Kernel,
          std::enable_if_t<!std::is_convertible_v<Kernel, std::unique_ptr<KernelClosure>>, int> = 0>
void launch_kernel(const AccInteStream& stream, Kernel&& kernel, const char* name = "kernel") {
  launch_kernel(stream,
                std::make_unique<detail::KernelClosureOf<std::decay_t<Kernel>>>(
                    std::in_place, std::forward<Kernel>(kernel)),
                name);
}

/// The closure of a kernel of type `Kernel` (a callable class), constructed
/// in place from `args`, for launch_kernel: what the constructor builds (a
/// call's arguments, say) is never moved. `->function()` is the kernel.
template <typename Kernel, typename... Args>
std::unique_ptr<detail::KernelClosureOf<Kernel>> make_kernel(Args&&... args) {
  return std::make_unique<detail::KernelClosureOf<Kernel>>(std::in_place,
                                                           std::forward<Args>(args)...);
}

/// Destroys, on the calling thread, the closures of kernels that have run
/// (and of graphs that released theirs) since the last call. Launches and
/// synchronisations call it; the caller must hold no lock that
/// a Python destructor might need. See Note [accinte kernels release on the
/// host].
C10_EXPORT void release_finished_kernels();

/// With ACCINTE_LAUNCH_BLOCKING=1 (read once), waits for `stream` and so
/// reports a failing kernel at its launch, like CUDA_LAUNCH_BLOCKING.
/// Called after every launch and asynchronous copy; otherwise a no-op.
C10_EXPORT void maybe_block_after_launch(const AccInteStream& stream);

/// The message of the most recent failed kernel, cleared by this call.
C10_EXPORT std::string take_kernel_error();

} // namespace c10::accinte
