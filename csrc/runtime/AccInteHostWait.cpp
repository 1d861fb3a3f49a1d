#include <csrc/runtime/AccInteHostWait.h>

#include <atomic>

namespace c10::accinte {
namespace {

// Written once at import, read by every wait: plain atomics, no lock.
std::atomic<void* (*)()> g_release{nullptr};
std::atomic<void (*)(void*)> g_restore{nullptr};

} // namespace

void set_host_wait_hooks(HostWaitHooks hooks) {
  g_restore.store(hooks.restore);
  g_release.store(hooks.release);
}

// LITERALINCLUDE START: STREAM HOST WAIT GUARD
HostWaitGuard::HostWaitGuard() noexcept {
  void* (*release)() = g_release.load();
  if (release != nullptr) {
    restore_ = g_restore.load();
    token_ = release();
  }
}

HostWaitGuard::~HostWaitGuard() {
  if (token_ != nullptr) {
    restore_(token_);
  }
}
// LITERALINCLUDE END: STREAM HOST WAIT GUARD

} // namespace c10::accinte
