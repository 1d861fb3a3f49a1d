#include <csrc/runtime/AccInteFunctions.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <array>
#include <atomic>

namespace c10::accinte {
namespace {

// The runtime caps the device count at 64 (see accinte.h).
constexpr int kMaxDevices = 64;
std::array<std::atomic<bool>, kMaxDevices> g_device_used{};

} // namespace

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
  return device < 0 ? current_device() : exchange_device(device);
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
  if (device >= 0 && device < kMaxDevices) {
    g_device_used[device].store(true, std::memory_order_relaxed);
  }
}

} // namespace c10::accinte
