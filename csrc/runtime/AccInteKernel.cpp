#include <csrc/runtime/AccInteKernel.h>

#include <csrc/runtime/AccInteException.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace c10::accinte {
namespace {

std::mutex g_error_mutex;
std::string g_last_error; // guarded by g_error_mutex

// LITERALINCLUDE START: EXECUTION LAUNCH KERNEL
int run_kernel(void* user_data) {
  std::unique_ptr<std::function<void()>> kernel(static_cast<std::function<void()>*>(user_data));
  try {
    (*kernel)();
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

} // namespace

void launch_kernel(const AccInteStream& stream, std::function<void()> kernel) {
  auto owned = std::make_unique<std::function<void()>>(std::move(kernel));
  ACCINTE_CHECK(acLaunchKernel(stream.stream(), &run_kernel, owned.get()));
  owned.release(); // the runtime now owns it; run_kernel deletes it
  maybe_block_after_launch(stream);
}

void maybe_block_after_launch(const AccInteStream& stream) {
  static const bool blocking = [] {
    const char* value = std::getenv("ACCINTE_LAUNCH_BLOCKING");
    return value != nullptr && std::string(value) == "1";
  }();
  if (blocking) {
    stream.synchronize();
  }
}
// LITERALINCLUDE END: EXECUTION LAUNCH KERNEL

std::string take_kernel_error() {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  return std::exchange(g_last_error, std::string());
}

} // namespace c10::accinte
