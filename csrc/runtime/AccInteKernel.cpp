#include <csrc/runtime/AccInteKernel.h>

#include <csrc/runtime/AccInteHostWait.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGraphsUtils.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {
namespace {

std::mutex g_error_mutex;
std::string g_last_error; // guarded by g_error_mutex

using Kernel = std::function<void()>;

// LITERALINCLUDE START: EXECUTION RETIRED KERNELS
// Closures of finished kernels, waiting for a host thread to destroy them.
std::mutex g_retired_mutex;
std::vector<std::unique_ptr<Kernel>> g_retired; // guarded by g_retired_mutex

void retire(std::unique_ptr<Kernel> kernel) {
  std::lock_guard<std::mutex> lock(g_retired_mutex);
  g_retired.push_back(std::move(kernel));
}
// LITERALINCLUDE END: EXECUTION RETIRED KERNELS

// LITERALINCLUDE START: EXECUTION LAUNCH KERNEL
int run_captured_kernel(void* user_data) {
  try {
    (*static_cast<Kernel*>(user_data))();
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
  std::unique_ptr<Kernel> kernel(static_cast<Kernel*>(user_data));
  const int status = run_captured_kernel(kernel.get());
  retire(std::move(kernel));
  return status;
}

// A graph's closures are released with its last launch, maybe on a worker.
void destroy_kernel(void* user_data) {
  retire(std::unique_ptr<Kernel>(static_cast<Kernel*>(user_data)));
}
// LITERALINCLUDE END: EXECUTION LAUNCH KERNEL

} // namespace

// LITERALINCLUDE START: GRAPH KERNEL LAUNCH
void launch_kernel(const AccInteStream& stream, std::function<void()> kernel, const char* name) {
  release_finished_kernels();
  auto owned = std::make_unique<Kernel>(std::move(kernel));
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
      launched = acLaunchKernelNamed(stream.stream(), &run_kernel, owned.get(), name);
    }
    ACCINTE_CHECK(launched);
    owned.release(); // the runtime now owns it; run_kernel deletes it
    maybe_block_after_launch(stream);
    return;
  }
  // Captured: the kernel runs at every replay, so the graph owns the closure
  // (a user object released with the graph's last launch).
  acUserObject_t object = nullptr;
  ACCINTE_CHECK(acUserObjectCreate(&object, owned.get(), &destroy_kernel, 1,
                                   acUserObjectNoDestructorSync));
  Kernel* raw = owned.release();
  const acError_t retained = acGraphRetainUserObject(graph, object, 1, acGraphUserObjectMove);
  if (retained != acSuccess) {
    ACCINTE_CHECK_WARN(acUserObjectRelease(object, 1));
    ACCINTE_CHECK(retained);
  }
  ACCINTE_CHECK(acLaunchKernelNamed(stream.stream(), &run_captured_kernel, raw, name));
  note_captured_kernel(capture, name);
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
  std::vector<std::unique_ptr<Kernel>> retired;
  {
    std::lock_guard<std::mutex> lock(g_retired_mutex);
    if (g_retired.empty()) {
      return;
    }
    retired.swap(g_retired);
  }
  // `retired` dies here, outside the lock: destructors may take the GIL.
}

std::string take_kernel_error() {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  return std::exchange(g_last_error, std::string());
}

} // namespace c10::accinte
