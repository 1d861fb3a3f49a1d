// stream_api.cpp: the registry of live streams (which validates handles and
// owns each device's lazily created default stream) and the stream C API:
// create / destroy / query / synchronize, priorities, host functions and
// kernel launches. acStreamWaitEvent lives with the events (event.cpp).
#include "activity.h"
#include "graph.h"
#include "memory.h"
#include "stream.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <utility>
#include <vector>

namespace accinte {
namespace {

// Stream priorities, as CUDA numbers them: lower is more urgent.
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -1;

// Guarded by streamTableMutex().
struct StreamTable {
  std::unordered_map<acStream_t, std::shared_ptr<Stream>> live;  // every stream, by handle
  std::vector<std::shared_ptr<Stream>> defaults;                 // per device, or null
  // Per device, the live streams whose worker has started: the only ones
  // that can have work (a device has 65 streams once PyTorch made its pool,
  // and a wait for the device, such as .item()'s copy, looks at them all).
  std::vector<std::vector<std::shared_ptr<Stream>>> started;
};

StreamTable& streamTable() {
  static auto* table = [] {
    auto* t = new StreamTable();
    t->defaults.resize(static_cast<size_t>(config().deviceCount));
    t->started.resize(static_cast<size_t>(config().deviceCount));
    return t;
  }();
  return *table;
}

std::shared_ptr<Stream> defaultStream(int device) {
  std::lock_guard<std::mutex> lock(streamTableMutex());
  StreamTable& table = streamTable();
  std::shared_ptr<Stream>& slot = table.defaults[static_cast<size_t>(device)];
  if (slot == nullptr) {
    auto stream = std::make_shared<Stream>(device, kLeastPriority, /*isDefault=*/true);
    table.live.emplace(stream->handle(), stream);
    slot = std::move(stream);
  }
  return slot;
}

// A snapshot of the device's started streams (one that never had work has
// neither work nor an error), in the order their first work was queued;
// streams started later are not waited for, as with work submitted after
// cudaDeviceSynchronize began. A waiting host runs their queues in this order
// (Note [accinte a waiting host runs the queue]); in the order of a hash of
// their addresses, which changed from run to run, a host that took first a
// stream waiting for another's event sat in that wait while the other's
// worker ran the rest, so which thread ran which task was left to chance.
std::vector<std::shared_ptr<Stream>> startedStreamsOf(int device) {
  std::lock_guard<std::mutex> lock(streamTableMutex());
  return streamTable().started[static_cast<size_t>(device)];
}

// Common part of acLaunchHostFunc and acLaunchKernel.
template <class Fn>
acError_t launch(acStream_t handle, Fn* fn, const char* kind, Stream::Task task) {
  if (fn == nullptr) {
    return acErrorInvalidValue;
  }
  std::shared_ptr<Stream> stream;
  if (const acError_t e = resolveStream(handle, &stream); e != acSuccess) {
    return e;
  }
  return stream->enqueue(std::move(task), kind, Stream::WhenFull::kWait);
}

}  // namespace

std::mutex& streamTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

void noteWorkerStarted(const std::shared_ptr<Stream>& stream) {
  std::lock_guard<std::mutex> lock(streamTableMutex());
  StreamTable& table = streamTable();
  // A stream destroyed meanwhile (a launch racing its destruction) stays out.
  if (table.live.count(stream->handle()) != 0) {
    table.started[static_cast<size_t>(stream->device())].push_back(stream);
  }
}

// Note [accinte resolving a stream handle]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every launch, queued copy and synchronisation resolves its handle, so a
// loop of x.add_(1).item() resolves one three times per iteration, each a
// lock of the registry and a hash lookup. Each thread therefore keeps the
// last handle it resolved, with a weak reference to its stream and the
// registry's generation at that time. acStreamDestroy, the only call that
// removes a handle, raises the generation under the registry's lock. While
// the generation is unchanged, the cached handle is still registered to the
// cached stream (a new stream cannot reuse the address of one that is still
// alive), and the handle resolves to it without the lock. A destroyed
// stream's handle is still refused: the generation moved, so the lookup goes
// to the registry, which no longer has it. The weak reference keeps no
// stream alive, so a destroyed stream's worker is joined when it was before.
// A stream destroyed by another thread while this one resolves its handle
// may still be returned, as if the lookup had happened just before the
// destruction: the two calls are unordered anyway.
namespace {

std::atomic<uint64_t> gStreamTableGeneration{0};  // raised by acStreamDestroy

struct LastResolved {
  acStream_t handle = nullptr;
  std::weak_ptr<Stream> stream;
  uint64_t generation = 0;
};

}  // namespace

acError_t resolveStream(acStream_t handle, std::shared_ptr<Stream>* stream) {
  if (handle == nullptr) {
    *stream = defaultStream(currentDevice());
    return acSuccess;
  }
  thread_local LastResolved last;
  if (handle == last.handle &&
      last.generation == gStreamTableGeneration.load(std::memory_order_acquire)) {
    if (auto cached = last.stream.lock()) {
      *stream = std::move(cached);
      return acSuccess;
    }
  }
  std::lock_guard<std::mutex> lock(streamTableMutex());
  const auto& live = streamTable().live;
  const auto it = live.find(handle);
  if (it == live.end()) {
    return acErrorInvalidResourceHandle;
  }
  *stream = it->second;
  last.handle = handle;
  last.stream = it->second;
  last.generation = gStreamTableGeneration.load(std::memory_order_relaxed);  // under the lock
  return acSuccess;
}

// The device's streams that have work unfinished now: the only ones a wait
// for the device must wait for (work queued later is not waited for anyway).
// In the same order as startedStreamsOf, but no reference is taken to an idle
// stream.
std::vector<std::shared_ptr<Stream>> busyStreamsOf(int device) {
  std::vector<std::shared_ptr<Stream>> result;
  std::lock_guard<std::mutex> lock(streamTableMutex());
  for (const auto& stream : streamTable().started[static_cast<size_t>(device)]) {
    if (!stream->idle()) {
      result.push_back(stream);
    }
  }
  return result;
}

void waitDeviceIdle(int device) {
  for (const auto& stream : busyStreamsOf(device)) {
    stream->waitIdle();
  }
}

acError_t synchronizeDevice(int device) {
  if (const acError_t e = checkDeviceNotCapturing(device); e != acSuccess) {
    return e;
  }
  const auto streams = startedStreamsOf(device);
  for (const auto& stream : streams) {
    stream->waitIdle();
  }
  // Every stream's error is read (and so cleared); the first is reported.
  acError_t first = acSuccess;
  for (const auto& stream : streams) {
    const acError_t e = stream->takeError();
    if (first == acSuccess) {
      first = e;
    }
  }
  return first;
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  return apiCall([&] {
    // Either pointer may be NULL, as with CUDA.
    if (leastPriority != nullptr) {
      *leastPriority = kLeastPriority;
    }
    if (greatestPriority != nullptr) {
      *greatestPriority = kGreatestPriority;
    }
    return acSuccess;
  });
}

acError_t acStreamCreate(acStream_t* stream) {
  return acStreamCreateWithPriority(stream, 0, kLeastPriority);
}

acError_t acStreamCreateWithPriority(acStream_t* stream, unsigned int flags, int priority) {
  return apiCall([&] {
    // acStreamNonBlocking is the only flag, and a no-op: there is no legacy
    // default stream that would synchronize with this one.
    if (stream == nullptr || (flags & ~acStreamNonBlocking) != 0) {
      return acErrorInvalidValue;
    }
    // Out-of-range priorities are clamped, not rejected, as CUDA does.
    priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
    auto created = std::make_shared<Stream>(currentDevice(), priority, /*isDefault=*/false);
    {
      std::lock_guard<std::mutex> lock(streamTableMutex());
      streamTable().live.emplace(created->handle(), created);
    }
    *stream = created->handle();
    return acSuccess;
  });
}

acError_t acStreamDestroy(acStream_t stream) {
  return blockingApiCall([&] {
    std::shared_ptr<Stream> doomed;
    {
      std::lock_guard<std::mutex> lock(streamTableMutex());
      auto& live = streamTable().live;
      const auto it = live.find(stream);
      // The default streams (and NULL) cannot be destroyed.
      if (it == live.end() || it->second->isDefault()) {
        return acErrorInvalidResourceHandle;
      }
      // A capturing stream is still needed to end its capture.
      if (const acError_t e = checkStreamNotCapturing(*it->second); e != acSuccess) {
        return e;
      }
      doomed = std::move(it->second);
      live.erase(it);
      // Before the lock is released: Note [accinte resolving a stream handle].
      gStreamTableGeneration.fetch_add(1, std::memory_order_release);
      auto& started = streamTable().started[static_cast<size_t>(doomed->device())];
      started.erase(std::remove(started.begin(), started.end(), doomed), started.end());
    }
    doomed->waitIdle();
    // A kernel failure nobody synchronized on would otherwise vanish with
    // the stream; report it here (the stream is destroyed regardless).
    // `doomed` then joins the idle worker as it goes out of scope.
    return doomed->takeError();
  });
}

acError_t acStreamQuery(acStream_t stream) {
  return apiCall([&] {
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    if (const acError_t e = checkStreamNotCapturing(*s); e != acSuccess) {
      return e;
    }
    return s->idle() ? acSuccess : acErrorNotReady;
  });
}

acError_t acStreamSynchronize(acStream_t stream) {
  return blockingApiCall([&] {
    const RuntimeActivity activity("acStreamSynchronize", acActivityKindSynchronization);
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    if (const acError_t e = checkStreamNotCapturing(*s); e != acSuccess) {
      return e;
    }
    s->waitIdle();
    return s->takeError();
  });
}

acError_t acStreamGetPriority(acStream_t stream, int* priority) {
  return apiCall([&] {
    if (priority == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    *priority = s->priority();
    return acSuccess;
  });
}

acError_t acStreamGetDevice(acStream_t stream, int* device) {
  return apiCall([&] {
    if (device == nullptr) {
      return acErrorInvalidValue;
    }
    if (stream == nullptr) {
      *device = currentDevice();  // no need to create the default stream
      return acSuccess;
    }
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    *device = s->device();
    return acSuccess;
  });
}

acError_t acDeviceGetDefaultStream(int device, acStream_t* stream) {
  return apiCall([&] {
    if (!isValidDevice(device)) {
      return acErrorInvalidDevice;
    }
    if (stream == nullptr) {
      return acErrorInvalidValue;
    }
    *stream = defaultStream(device)->handle();
    return acSuccess;
  });
}

acError_t acLaunchHostFunc(acStream_t stream, acHostFn_t fn, void* userData) {
  return apiCall([&] {
    const RuntimeActivity activity("acLaunchHostFunc");
    return launch(stream, fn, "host function", [fn, userData] {
      fn(userData);
      return acSuccess;
    });
  });
}

// LITERALINCLUDE START: RUNTIME LAUNCH KERNEL
acError_t acLaunchKernel(acStream_t stream, acKernelFn_t fn, void* userData) {
  return acLaunchKernelNamed(stream, fn, userData, nullptr);
}

acError_t acLaunchKernelNamed(acStream_t stream, acKernelFn_t fn, void* userData,
                              const char* name) {
  return apiCall([&] {
    const RuntimeActivity activity("acLaunchKernel");
    return launch(stream, fn, "kernel",
                  [fn, userData, name, correlation = activity.correlation()] {
      // Opened when the kernel starts, not when it is queued: until then
      // device memory stays protected.
      const KernelAccessWindow window;
      if (window.status() != acSuccess) {
        return window.status();
      }
      // Stamped here, around the body alone (see Note [accinte activity records]).
      const DeviceActivity record(acActivityKindKernel, correlation, -1, name);
      return fn(userData) == 0 ? acSuccess : acErrorLaunchFailure;
    });
  });
}
// LITERALINCLUDE END: RUNTIME LAUNCH KERNEL

}  // extern "C"
