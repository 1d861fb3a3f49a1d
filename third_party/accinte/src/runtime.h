// runtime.h: state and helpers shared by every part of libaccinte (internal).
//
// The runtime is split by concept, one translation unit each:
//   config.cpp         environment variables, read once
//   fork.cpp           fork detection (pthread_atfork)
//   error.cpp          error names and strings
//   device.cpp         device count, current device, properties, device sync
//   memory.cpp         allocation registry, capacity, pointer attributes
//   ipc.cpp            shareable device memory and acIpc*
//   ipc_event.cpp      interprocess events (acIpcGetEventHandle, acIpcOpenEventHandle)
//   access_window.cpp  strict-mode protection and access windows
//   copy.cpp           memcpy / memset, synchronous and queued
//   copy_engine.cpp    large copies split across helper threads
//   stream.cpp         the Stream worker (queue, tickets, errors)
//   stream_doorbell.cpp how a launch wakes an idle worker
//   stream_api.cpp     stream registry and the stream / launch C API
//   event.cpp          events
//   capture.cpp        stream capture and the checks that guard it
//   graph.cpp          graphs, executable graphs, user objects
//   activity.cpp       activity records for profilers (acActivity*)
//
// Lifetime: every singleton is heap-allocated on first use and intentionally
// never destroyed. Worker threads may still be parked on a condition variable
// when the process exits; destroying the objects they wait on from a static
// destructor would be undefined behaviour (or a hang, if we joined threads
// that run user callbacks). Leaking them lets exit() proceed and the kernel
// reclaim everything.
#ifndef ACCINTE_SRC_RUNTIME_H_
#define ACCINTE_SRC_RUNTIME_H_

#include <accinte/accinte.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>

namespace accinte {

// ---- configuration (config.cpp) --------------------------------------------

struct Config {
  int deviceCount;      // ACCINTE_DEVICE_COUNT, 1..ACCINTE_MAX_DEVICE_COUNT, default 2
  size_t deviceMemory;  // ACCINTE_DEVICE_MEMORY, bytes per device, default 4 GiB
  bool strict;          // ACCINTE_STRICT=1
  size_t launchQueueDepth;  // ACCINTE_LAUNCH_QUEUE_DEPTH, 1..2^20, default 1024
  // ACCINTE_SPIN_US, 0..1000000; default 50 (Note [accinte spin before sleeping])
  int spinMicroseconds;
  // ACCINTE_LAUNCH_LATENCY_US, 0..1000000 (Note [accinte launch latency])
  int launchLatencyMicroseconds;
};

// The configuration, parsed from the environment on the first call and fixed
// for the life of the process. Thread-safe.
const Config& config();

inline bool isValidDevice(int device) {
  return device >= 0 && device < config().deviceCount;
}

// ---- fork safety (fork.cpp) ------------------------------------------------

// Records that the runtime now owns state a forked child cannot inherit
// (allocations, streams, events, worker threads). Called by whatever creates
// such state; cheap and idempotent.
void markInitialized();

// True in a child forked after markInitialized() ran in the parent: such a
// child has none of the parent's worker threads, so every call must fail.
bool inPoisonedChild();

// The global table locks (memory.cpp, stream_api.cpp, event.cpp, graph.cpp,
// capture.cpp). fork.cpp
// holds all of them across fork() so that a child forked before the runtime
// was initialized never inherits a table locked mid-update by another thread.
// No code path holds two of them at once, so any acquisition order is safe.
std::mutex& allocationTableMutex();
std::mutex& streamTableMutex();
std::mutex& eventTableMutex();
std::mutex& graphTableMutex();
std::mutex& captureTableMutex();

// ---- threads ----------------------------------------------------------------

// The calling host thread's current device (device.cpp); 0 for a new thread.
int currentDevice();

// True on a stream's worker thread, i.e. inside a host function or kernel
// (stream.cpp). Calls that wait for streams refuse to run there: waiting on
// the worker's own stream could never finish.
bool onWorkerThread();

// ---- device-wide waits (stream_api.cpp) ------------------------------------

// Blocks until the work queued so far on every stream of `device` has
// finished. Pending kernel errors stay pending (acFree and synchronous copies
// wait without consuming them).
void waitDeviceIdle(int device);

// waitDeviceIdle, then returns and clears the first pending kernel error of
// the device's streams (acDeviceSynchronize).
acError_t synchronizeDevice(int device);

// ---- the C API boundary -----------------------------------------------------

// LITERALINCLUDE START: RUNTIME API BOUNDARY
// Runs `body` as the implementation of one C API call: refuses to run in a
// poisoned fork child and turns any C++ exception into an error code, since
// no exception may cross the C boundary.
template <class Body>
acError_t apiCall(Body&& body) noexcept {
  if (inPoisonedChild()) {
    return acErrorInitializationError;
  }
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return acErrorMemoryAllocation;
  } catch (const std::system_error& e) {
    // std::thread and std::mutex report exhausted host resources this way.
    const auto code = e.code();
    if (code == std::errc::resource_unavailable_try_again ||
        code == std::errc::not_enough_memory) {
      return acErrorMemoryAllocation;
    }
    return acErrorUnknown;
  } catch (...) {
    return acErrorUnknown;
  }
}

// apiCall for calls that wait for streams: they also refuse to run on a
// worker thread (see onWorkerThread).
template <class Body>
acError_t blockingApiCall(Body&& body) noexcept {
  return apiCall([&]() -> acError_t {
    if (onWorkerThread()) {
      return acErrorNotSupported;
    }
    return body();
  });
}
// LITERALINCLUDE END: RUNTIME API BOUNDARY

// An enum argument as the int a C caller passed. Any int may arrive, and
// loading an enum that holds a value outside its enumerators is undefined
// behaviour in C++ (UBSan's enum check), so its bytes are read as an int.
template <typename Enum>
int callerInt(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int result = 0;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

}  // namespace accinte

#endif  // ACCINTE_SRC_RUNTIME_H_
