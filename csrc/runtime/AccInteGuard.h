#pragma once
// AccInteGuard: RAII current-device switch (the CUDAGuard of this backend).
// Used inside the backend wherever a runtime call must run on a given device;
// user code goes through c10::DeviceGuard, which reaches AccInteGuardImpl.

#include <csrc/runtime/AccInteFunctions.h>

namespace c10::accinte {

// LITERALINCLUDE START: GUARD RAII
class AccInteGuard {
 public:
  /// Makes `device` current for this thread; -1 keeps the current device.
  /// Throws on any other index out of range.
  explicit AccInteGuard(DeviceIndex device)
      : previous_(device == -1 ? current_device() : exchange_device(device)) {}

  AccInteGuard(const AccInteGuard&) = delete;
  AccInteGuard& operator=(const AccInteGuard&) = delete;

  /// Restores the device that was current at construction, if it is no
  /// longer current (the common case is a guard that changed nothing). Never
  /// throws.
  ~AccInteGuard() {
    try {
      if (current_device() != previous_) {
        set_device(previous_);
      }
    } catch (...) {
      // Restoring a device that was valid a moment ago cannot fail unless the
      // runtime became unusable (fork); nothing useful can be done here.
    }
  }

  DeviceIndex original_device() const { return previous_; }

 private:
  DeviceIndex previous_;
};
// LITERALINCLUDE END: GUARD RAII

} // namespace c10::accinte
