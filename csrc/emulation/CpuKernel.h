#pragma once
// The one scope every CPU-computed accinte kernel runs in, and the ways to
// launch such a kernel: queued (launch_cpu_kernel), queued and waited for
// (run_and_wait). See Note [accinte one kernel scope] (CpuKernel.cpp).
//
// "Worker" below is a role: the thread that runs a stream's work, either the
// stream's own worker thread or a host thread that runs the queue while it
// waits for it (Note [accinte a waiting host runs the queue]).

#include <c10/util/Exception.h>

#include <csrc/emulation/CallerState.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include <exception>
#include <functional>
#include <utility>
#include <vector>

namespace at {
class Tensor;
} // namespace at

namespace at::native::accinte {

/// A warning handler that drops every warning: a queued kernel's warnings
/// cannot reach the user at the call (see CpuKernelScope).
struct DiscardWarnings final : c10::WarningHandler {
  void process(const c10::Warning& /*warning*/) override {}
};

/// A warning handler that keeps every warning, for the calling thread to
/// raise again (see run_and_wait).
struct CollectWarnings final : c10::WarningHandler {
  void process(const c10::Warning& warning) override {
    warnings.push_back(warning);
  }
  std::vector<c10::Warning> warnings;
};

/// A warning handler that ends the run at its first warning, by throwing
/// WarningEndsRun: for a run on host stand-ins, whose outcome is dropped
/// once it warned (FirstRun.h). See Note [accinte a warning ends a run on
/// stand-ins] (FirstRun.cpp).
struct EndRunOnWarning final : c10::WarningHandler {
  struct WarningEndsRun : std::exception {
    const char* what() const noexcept override { return "a warning ended the run"; }
  };
  void process(const c10::Warning& /*warning*/) override {
    warned = true;
    throw WarningEndsRun();
  }
  bool warned = false;
};

/// RAII: the scope of a CPU kernel's body on a worker. In order:
///   - a worker's own state (WorkerStateGuard): none of what lives above
///     the backend on a waiting host (dispatch and function modes, the
///     Python dispatcher, thread-local profiler callbacks);
///   - on top, the state of the thread that launched the kernel (`caller`,
///     CallerStateGuard): grad, inference and autocast modes, thread count,
///     denormal flags, with the autograd keys excluded;
///   - warnings sent to `warnings`, by default nowhere;
///   - in_cpu_kernel() true, so that the kernel's temporaries come from
///     the scratch cache (KernelScratch.h).
/// Everything is restored at exit, so a waiting host gets its own state back.
class CpuKernelScope {
 public:
  explicit CpuKernelScope(const CallerState& caller, c10::WarningHandler* warnings = &discard());
  ~CpuKernelScope();
  CpuKernelScope(const CpuKernelScope&) = delete;
  CpuKernelScope& operator=(const CpuKernelScope&) = delete;

 private:
  static DiscardWarnings& discard();

  WorkerStateGuard worker_; // first: the caller's state goes on top
  CallerStateGuard caller_;
  c10::WarningUtils::WarningHandlerGuard warnings_;
  bool was_in_kernel_;
};

/// Whether the calling thread runs a CPU kernel's body (inside a
/// CpuKernelScope), on the stream's worker or on a waiting host.
bool in_cpu_kernel();

/// Queues `kernel` on `stream` (c10::accinte::launch_kernel) to run inside a
/// CpuKernelScope with the calling thread's state, captured now. `kernel`
/// owns what it works on (CPU aliases, copied arguments), never the caller's
/// locals; `name` labels it as launch_kernel's does. What it throws fails the
/// stream (reported at the next synchronisation); its warnings are dropped.
template <typename Kernel>
void launch_cpu_kernel(const c10::accinte::AccInteStream& stream, Kernel&& kernel,
                       const char* name) {
  c10::accinte::launch_kernel(
      stream,
      [kernel = std::forward<Kernel>(kernel), caller = CallerState::capture()]() mutable {
        CpuKernelScope scope(caller);
        kernel();
      },
      name);
}

/// For the synchronous paths: queues `kernel` on `stream` as
/// launch_cpu_kernel does, waits for it, and rethrows what it threw, with
/// its type. The warnings the kernel raised are raised again on the calling
/// thread, in order, unless `quiet`; returns how many there were. The caller
/// checks first that `stream` is not capturing, since nothing may wait for a
/// capturing stream. `kernel` owns what it works on.
size_t run_and_wait(const c10::accinte::AccInteStream& stream, std::function<void()> kernel,
                    const char* name, bool quiet = false);

/// A new device tensor with `host`'s sizes, strides and dtype, filled with
/// `host`'s value by a kernel queued on `stream` (`host` is a CPU tensor).
at::Tensor device_copy_of(const at::Tensor& host, const c10::accinte::AccInteStream& stream);

} // namespace at::native::accinte
