#include <csrc/runtime/AccInteFunctions.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <pthread.h>

#include <array>
#include <atomic>

namespace c10::accinte {
namespace {

std::array<std::atomic<bool>, ACCINTE_MAX_DEVICE_COUNT> g_device_used{};

// Note [accinte fork safety]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// fork() copies the calling thread only; every lock another thread held at
// that moment stays locked in the child for good. libaccinte takes its table
// locks across fork() (third_party/accinte/src/fork.cpp) and refuses every
// call in a child of an initialised parent. The backend's own locks (caching
// allocator, its block map, the pinned-memory allocator, the IPC counter
// tables) are different: a child still frees the tensors it inherited, and
// those deleters would wait for a lock no thread will ever release. So the
// child never touches them: in_bad_fork() is set by a fork handler in the
// child, and every deleter checks it first and leaves the memory alone (it is
// the child's copy of the parent's heap, gone when the child exits). A child
// of a parent that never used the device is not affected: it has a runtime of
// its own.
std::atomic<bool> g_in_bad_fork{false};

void after_fork_in_child() {
  // libaccinte's own child handler ran first (it was registered when that
  // library was loaded, before this one) and decided whether the runtime is
  // usable here; ask it. Async-signal-safe: an atomic load and a compare.
  int count = 0;
  if (acGetDeviceCount(&count) == acErrorInitializationError) {
    g_in_bad_fork.store(true, std::memory_order_relaxed);
  }
}

// pthread_atfork fails only with ENOMEM while the library loads; there is no
// caller to tell, and the runtime still refuses use in a child.
const bool g_fork_handler_registered = [] {
  return pthread_atfork(nullptr, nullptr, &after_fork_in_child) == 0;
}();

} // namespace

bool in_bad_fork() noexcept {
  return g_in_bad_fork.load(std::memory_order_relaxed);
}

// LITERALINCLUDE START: DEVICE COUNT AND INDEX
DeviceIndex device_count() noexcept {
  // The count cannot change during a process: ask the runtime once.
  static const DeviceIndex count = [] {
    int n = 0;
    return acGetDeviceCount(&n) == acSuccess ? static_cast<DeviceIndex>(n) : DeviceIndex{0};
  }();
  return count;
}

void check_device_index(DeviceIndex device) {
  const auto count = device_count();
  TORCH_CHECK(device >= 0 && device < count, "Invalid accinte device index ", int(device),
              ": ", int(count), " device(s) available (valid indices are 0..", int(count) - 1,
              "; ACCINTE_DEVICE_COUNT sets the count)");
}
// LITERALINCLUDE END: DEVICE COUNT AND INDEX

DeviceIndex resolve_device_index(DeviceIndex device) {
  if (device == -1) {
    return current_device();
  }
  check_device_index(device);
  return device;
}

DeviceIndex current_device() {
  int device = 0;
  ACCINTE_CHECK(acGetDevice(&device));
  return static_cast<DeviceIndex>(device);
}

void set_device(DeviceIndex device) {
  check_device_index(device);
  ACCINTE_CHECK(acSetDevice(device));
  mark_device_used(device);
}

DeviceIndex exchange_device(DeviceIndex device) {
  const DeviceIndex previous = current_device();
  if (device != previous) {
    set_device(device);
  }
  return previous;
}

DeviceIndex maybe_exchange_device(DeviceIndex device) {
  return device == -1 ? current_device() : exchange_device(device);
}

void device_synchronize(DeviceIndex device) {
  AccInteGuard guard(device);
  {
    HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
    ACCINTE_CHECK(acDeviceSynchronize());
  }
  release_finished_kernels();
}

bool has_primary_context(DeviceIndex device) {
  check_device_index(device);
  return g_device_used[device].load(std::memory_order_relaxed);
}

acDeviceProp get_device_properties(DeviceIndex device) {
  check_device_index(device);
  acDeviceProp prop{};
  ACCINTE_CHECK(acGetDeviceProperties(&prop, device));
  return prop;
}

void mark_device_used(DeviceIndex device) {
  if (device >= 0 && device < ACCINTE_MAX_DEVICE_COUNT) {
    g_device_used[device].store(true, std::memory_order_relaxed);
  }
}

} // namespace c10::accinte
