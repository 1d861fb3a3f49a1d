// device.cpp: the emulated devices: how many there are, which one is current
// on each host thread, their properties, and device-wide synchronization.
//
// None of these calls initializes the runtime (see fork.cpp): counting and
// describing devices is safe before a fork, as it is with NVML-backed CUDA
// queries.
#include "activity.h"
#include "runtime.h"

#include <cstring>
#include <thread>

namespace accinte {
namespace {

// Per host thread, as in CUDA; a thread starts on device 0.
thread_local int tCurrentDevice = 0;

}  // namespace

int currentDevice() {
  return tCurrentDevice;
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acGetDeviceCount(int* count) {
  return apiCall([&] {
    if (count == nullptr) {
      return acErrorInvalidValue;
    }
    *count = config().deviceCount;
    return acSuccess;
  });
}

acError_t acSetDevice(int device) {
  return apiCall([&] {
    if (!isValidDevice(device)) {
      return acErrorInvalidDevice;  // the current device is left unchanged
    }
    tCurrentDevice = device;
    return acSuccess;
  });
}

acError_t acGetDevice(int* device) {
  return apiCall([&] {
    if (device == nullptr) {
      return acErrorInvalidValue;
    }
    *device = tCurrentDevice;
    return acSuccess;
  });
}

acError_t acGetDeviceProperties(acDeviceProp* prop, int device) {
  return apiCall([&] {
    if (prop == nullptr) {
      return acErrorInvalidValue;
    }
    if (!isValidDevice(device)) {
      return acErrorInvalidDevice;
    }
    std::memset(prop, 0, sizeof *prop);
    std::strncpy(prop->name, "AccInte Emulated Device", sizeof prop->name - 1);
    prop->totalGlobalMem = config().deviceMemory;
    prop->major = 1;
    prop->minor = 0;
    // Kernels run on host threads; report how many the host can run at once.
    const unsigned cpus = std::thread::hardware_concurrency();
    prop->multiProcessorCount = cpus > 0 ? static_cast<int>(cpus) : 1;
    return acSuccess;
  });
}

acError_t acDeviceSynchronize(void) {
  return blockingApiCall([] {
    const RuntimeActivity activity("acDeviceSynchronize", acActivityKindSynchronization);
    return synchronizeDevice(tCurrentDevice);
  });
}

}  // extern "C"
