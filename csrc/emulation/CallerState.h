#pragma once
// The thread-local state a CPU kernel sees on a stream's worker: the state of
// the thread that launched it. See Note [accinte kernels see their caller's
// state].

#include <ATen/ThreadLocalState.h>
#include <c10/core/AutogradState.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>

#include <optional>

namespace at::native::accinte {

/// What a CPU kernel can observe of the thread that launched it, captured at
/// the launch: grad, inference and forward-grad modes, the excluded dispatch
/// keys (which say, among others, whether autocast is on for each device),
/// the autocast dtypes of the CPU and of accinte and the autocast cache flag,
/// the intra-op thread count, and the floating-point flush-to-zero and
/// denormals-are-zero flags. Cheap to capture and to copy (plain values).
class CallerState {
 public:
  /// The calling thread's state.
  static CallerState capture();

 private:
  CallerState() = default;
  friend class CallerStateGuard;

  c10::AutogradState autograd_{false, false, false, false};
  c10::DispatchKeySet excluded_;
  c10::ScalarType autocast_cpu_dtype_ = c10::ScalarType::Undefined;
  c10::ScalarType autocast_device_dtype_ = c10::ScalarType::Undefined;
  bool autocast_cache_ = true;
  int num_threads_ = 0;
  unsigned int denormal_flags_ = 0;
};

/// RAII: makes `caller` the current thread's state, with the autograd keys
/// (and ADInplaceOrView) excluded besides, and restores the thread's own
/// state at exit, the intra-op thread count included. Only the parts that
/// differ are replaced and restored: a worker running kernels of one thread,
/// or a host thread running its own kernel (Note [accinte a waiting host
/// runs the queue]), mostly has the state already, and a kernel leaves the
/// state as it found it (PyTorch's own guards restore theirs).
class CallerStateGuard {
 public:
  explicit CallerStateGuard(const CallerState& caller);
  ~CallerStateGuard();
  CallerStateGuard(const CallerStateGuard&) = delete;
  CallerStateGuard& operator=(const CallerStateGuard&) = delete;

 private:
  CallerState own_;                // the replaced parts of the thread's own state
  c10::DispatchKeySet own_included_;
  unsigned replaced_ = 0;          // which parts (CallerState.cpp's Part)
};

/// RAII: gives a host thread that runs a queued kernel itself (Note
/// [accinte a waiting host runs the queue]) the state of a stream worker
/// for the kernel's span: nothing of what lives above the backend, where a
/// kernel runs on the worker and as a CUDA kernel runs (no dispatch or
/// function modes, no included dispatch keys, no thread-local profiler
/// callbacks, no Python dispatcher), and restores the thread's own at exit.
/// Free on a thread that has none of it, as a worker never has. Apply it
/// before CallerStateGuard, which then sets the caller's state on top.
class WorkerStateGuard {
 public:
  WorkerStateGuard();
  WorkerStateGuard(const WorkerStateGuard&) = delete;
  WorkerStateGuard& operator=(const WorkerStateGuard&) = delete;

 private:
  std::optional<at::ThreadLocalStateGuard> worker_state_;
};

} // namespace at::native::accinte
