#include <csrc/runtime/AccInteKernel.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGraph.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace c10::accinte {
namespace {

std::mutex g_error_mutex;
std::string g_last_error; // guarded by g_error_mutex

// LITERALINCLUDE START: EXECUTION LAUNCH KERNEL
using Kernel = std::function<void()>;

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

// A launch that runs once owns its closure.
int run_kernel(void* user_data) {
  std::unique_ptr<Kernel> kernel(static_cast<Kernel*>(user_data));
  return run_captured_kernel(kernel.get());
}

void destroy_kernel(void* user_data) {
  delete static_cast<Kernel*>(user_data);
}
// LITERALINCLUDE END: EXECUTION LAUNCH KERNEL

} // namespace

// LITERALINCLUDE START: GRAPH KERNEL LAUNCH
void launch_kernel(const AccInteStream& stream, std::function<void()> kernel, const char* name) {
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
    ACCINTE_CHECK(acLaunchKernelNamed(stream.stream(), &run_kernel, owned.get(), name));
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

std::string take_kernel_error() {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  return std::exchange(g_last_error, std::string());
}

} // namespace c10::accinte
