#include <csrc/runtime/AccInteKernel.h>

#include <csrc/runtime/AccInteHostWait.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGraphsUtils.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

namespace c10::accinte {

// LITERALINCLUDE START: EXECUTION RETIRED KERNELS
// Closures of finished kernels, waiting for a host thread to destroy them: a
// stack that workers push onto and a host thread empties in one exchange, so
// neither side takes a lock or allocates.
class RetiredKernels {
 public:
  void push(KernelClosure* kernel) noexcept {
    kernel->next_retired_ = head_.load(std::memory_order_relaxed);
    while (!head_.compare_exchange_weak(kernel->next_retired_, kernel,
                                        std::memory_order_release, std::memory_order_relaxed)) {
    }
  }
  // Destroys every closure retired so far, on the calling thread.
  void release_all() {
    if (head_.load(std::memory_order_relaxed) == nullptr) {
      return;
    }
    KernelClosure* kernel = head_.exchange(nullptr, std::memory_order_acquire);
    while (kernel != nullptr) {
      std::unique_ptr<KernelClosure> doomed(kernel);
      kernel = kernel->next_retired_;
    }
  }

 private:
  std::atomic<KernelClosure*> head_{nullptr};
};
// LITERALINCLUDE END: EXECUTION RETIRED KERNELS

namespace {

RetiredKernels& retired_kernels() {
  static auto* retired = new RetiredKernels(); // leaked: workers may push at exit
  return *retired;
}

std::mutex g_error_mutex;
std::string g_last_error; // guarded by g_error_mutex

// LITERALINCLUDE START: EXECUTION LAUNCH KERNEL
int run_captured_kernel(void* user_data) {
  try {
    static_cast<KernelClosure*>(user_data)->run();
    return 0;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    g_last_error = e.what();
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    g_last_error = "unknown exception in accinte kernel";
  }
  return 1;
}

// A launch that runs once owns its closure, and retires it once it has run
// (see Note [accinte kernels release on the host]).
int run_kernel(void* user_data) {
  const int status = run_captured_kernel(user_data);
  retired_kernels().push(static_cast<KernelClosure*>(user_data));
  return status;
}

// A graph's closures are released with its last launch, maybe on a worker.
void destroy_kernel(void* user_data) {
  retired_kernels().push(static_cast<KernelClosure*>(user_data));
}
// LITERALINCLUDE END: EXECUTION LAUNCH KERNEL

} // namespace

// LITERALINCLUDE START: GRAPH KERNEL LAUNCH
void launch_kernel(const AccInteStream& stream, std::unique_ptr<KernelClosure> kernel,
                   const char* name) {
  acStreamCaptureStatus status = acStreamCaptureStatusNone;
  CaptureId_t capture = 0;
  acGraph_t graph = nullptr;
  // The common case costs one atomic load: no capture underway anywhere, so
  // none on this stream (a capture begun concurrently by another thread is
  // unordered with this launch, as on CUDA).
  if (C10_UNLIKELY(captures_underway())) {
    ACCINTE_CHECK(acStreamGetCaptureInfo(stream.stream(), &status, &capture, &graph));
  }
  if (status == acStreamCaptureStatusNone) {
    acError_t launched = acSuccess;
    {
      // A launch into a full queue waits for the worker (Note [accinte launch
      // queue depth]), which may need the GIL to run a Python kernel queued
      // ahead: Note [accinte host waits and the GIL].
      HostWaitGuard no_gil;
      launched = acLaunchKernelNamed(stream.stream(), &run_kernel, kernel.get(), name);
    }
    ACCINTE_CHECK(launched);
    kernel.release(); // the runtime now owns it; run_kernel retires it
    // Earlier kernels' closures are destroyed once this one is queued, while
    // the worker may already run it: a host thread about to wait for the
    // stream (.item()) waits that much less.
    release_finished_kernels();
    maybe_block_after_launch(stream);
    return;
  }
  // Captured: the kernel runs at every replay, so the graph owns the closure
  // (a user object released with the graph's last launch).
  acUserObject_t object = nullptr;
  ACCINTE_CHECK(acUserObjectCreate(&object, kernel.get(), &destroy_kernel, 1,
                                   acUserObjectNoDestructorSync));
  KernelClosure* raw = kernel.release();
  const acError_t retained = acGraphRetainUserObject(graph, object, 1, acGraphUserObjectMove);
  if (retained != acSuccess) {
    ACCINTE_CHECK_WARN(acUserObjectRelease(object, 1));
    ACCINTE_CHECK(retained);
  }
  ACCINTE_CHECK(acLaunchKernelNamed(stream.stream(), &run_captured_kernel, raw, name));
  note_captured_kernel(capture, name);
  release_finished_kernels();
}
// LITERALINCLUDE END: GRAPH KERNEL LAUNCH

// LITERALINCLUDE START: EXECUTION LAUNCH BLOCKING
void maybe_block_after_launch(const AccInteStream& stream) {
  static const bool blocking = [] {
    const char* value = std::getenv("ACCINTE_LAUNCH_BLOCKING");
    return value != nullptr && std::string(value) == "1";
  }();
  if (blocking && !is_stream_capturing(stream)) {
    stream.synchronize();
  }
}
// LITERALINCLUDE END: EXECUTION LAUNCH BLOCKING

void release_finished_kernels() {
  retired_kernels().release_all(); // destructors may take the GIL: no lock is held
}

std::string take_kernel_error() {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  return std::exchange(g_last_error, std::string());
}

} // namespace c10::accinte
