#pragma once
// Host waits and Python's GIL.
//
// Note [accinte host waits and the GIL]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A host thread that waits for the device (a stream, event or device
// synchronisation, a synchronous copy, .item()) must not hold Python's GIL
// while it waits: anything queued ahead of it that needs the GIL (a CPU
// kernel written in Python, say) would wait for the waiter, which waits for
// it, forever. PyTorch's own bindings release the GIL around most ATen calls,
// but not all (torch.UntypedStorage.copy_ and .cpu(), resize_ of a storage,
// ...), and this library cannot link Python to release it itself. So the
// bindings (libtorch_bindings) register two hooks here, and every wait that
// holds no other lock releases the GIL through a HostWaitGuard when the
// calling thread holds it, like pybind11::gil_scoped_release.
//
// Waits under a lock (the caching allocator's empty_cache, acFree) keep the
// GIL, as CUDA's allocator does: releasing it there could deadlock against a
// thread that holds the GIL and wants the lock. They are safe because no
// kernel ever needs the GIL to finish: kernels never destroy Python objects
// on a stream worker (see Note [accinte kernels release on the host] in
// AccInteKernel.h).

#include <c10/macros/Export.h>

namespace c10::accinte {

/// The bindings' GIL hooks: `release` releases the GIL if the calling thread
/// holds it (and Python is running) and returns a token for `restore`, or
/// nullptr when it released nothing; `restore` takes a non-null token back.
struct HostWaitHooks {
  void* (*release)() = nullptr;
  void (*restore)(void*) = nullptr;
};

/// Registers the GIL hooks (libtorch_bindings does, at import). Thread-safe;
/// until it is called, HostWaitGuard does nothing.
C10_EXPORT void set_host_wait_hooks(HostWaitHooks hooks);

/// RAII: the calling thread does not hold the GIL while the guard lives (it
/// is released at construction if held, taken back at destruction). Use it
/// around a host wait for the device that holds no other lock. Never throws.
class C10_EXPORT HostWaitGuard {
 public:
  HostWaitGuard() noexcept;
  ~HostWaitGuard();
  HostWaitGuard(const HostWaitGuard&) = delete;
  HostWaitGuard& operator=(const HostWaitGuard&) = delete;

 private:
  void* token_ = nullptr;
  void (*restore_)(void*) = nullptr;
};

} // namespace c10::accinte
