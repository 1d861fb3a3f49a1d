// activity.h: the activity records a profiler reads (internal). See Note
// [accinte activity records] in accinte.h.
//
// Two RAII scopes stamp records: RuntimeActivity around a C API call on the
// calling thread (it also hands out the correlation id that the call's device
// work carries), DeviceActivity around the device work itself, on the stream
// worker or, for synchronous copies, on the calling thread. Both cost one
// relaxed atomic load when no kind is enabled.
#ifndef ACCINTE_SRC_ACTIVITY_H_
#define ACCINTE_SRC_ACTIVITY_H_

#include "runtime.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace accinte {

// Bit (1 << kind) is set while `kind` is enabled.
extern std::atomic<uint32_t> gActivityKinds;

inline uint32_t enabledActivityKinds() {
  return gActivityKinds.load(std::memory_order_relaxed);
}

inline bool isActivityEnabled(uint32_t kinds, acActivityKind kind) {
  return (kinds & (1u << kind)) != 0;
}

// Around one C API call that may queue device work. While any kind is
// enabled, it draws a correlation id for that work; at its end it stores the
// RUNTIME (or SYNCHRONIZATION) record and, if the thread's external id stack
// is not empty, the EXTERNAL_CORRELATION record.
class RuntimeActivity {
 public:
  explicit RuntimeActivity(const char* api, acActivityKind kind = acActivityKindRuntime);
  ~RuntimeActivity();
  RuntimeActivity(const RuntimeActivity&) = delete;
  RuntimeActivity& operator=(const RuntimeActivity&) = delete;

  // 0 while no kind is enabled.
  uint64_t correlation() const { return correlation_; }

 private:
  const char* const api_;
  const acActivityKind kind_;
  uint64_t correlation_ = 0;
  uint64_t start_ = 0;
};

// Around device work: a kernel, a copy or a memset. `device` names the
// device for work that runs off a stream (synchronous copies); on a worker
// the worker's stream and device are used. `name` (kernels) may be NULL.
class DeviceActivity {
 public:
  DeviceActivity(acActivityKind kind, uint64_t correlation, int device, const char* name = nullptr,
                 size_t bytes = 0, acMemcpyKind copyKind = acMemcpyDefault);
  ~DeviceActivity();
  DeviceActivity(const DeviceActivity&) = delete;
  DeviceActivity& operator=(const DeviceActivity&) = delete;

 private:
  bool recording_ = false;
  acActivityRecord record_{};
};

// The calling stream worker's stream handle and device (stream.cpp); false
// off worker threads.
bool workerStreamOf(acStream_t* stream, int* device);

}  // namespace accinte

#endif  // ACCINTE_SRC_ACTIVITY_H_
