// copy.cpp: acMemcpy / acMemset and their queued (Async) forms.
//
// Every operation is validated when it is issued, so argument errors are
// returned by the call itself, never reported later by a stream:
//   - the kind must agree with the pointers (acErrorInvalidMemcpyDirection);
//     acMemcpyDefault accepts any combination and infers the direction;
//   - a device range must lie inside one allocation (acErrorInvalidValue).
// The synchronous forms first wait for every stream of each device they
// touch, then copy on the calling thread: simpler than CUDA's legacy-stream
// rules, and never weaker. The Async forms run on the stream's worker and
// keep the allocations they touch alive until they have run, except a copy
// into pageable host memory, which waits for its stream and copies on the
// calling thread, as CUDA's does:
//
// Note [accinte copies into pageable memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cudaMemcpyAsync into pageable host memory returns only once the copy is
// done: the DMA engine cannot write memory the driver has not pinned, so the
// driver waits for the stream and copies through a staging buffer. Every
// reader of a device value (Tensor.item(), .cpu(), printing) waits for the
// copy anyway, so acMemcpyAsync does the same: when the destination is
// memory the runtime did not allocate, it waits for the stream and copies
// on the calling thread, sparing a task on the queue and the hand-off back
// (the .item() round trip: a queued copy and a wait for it). It still
// queues the copy where waiting is not allowed: on a worker thread (a host
// function would wait for its own stream) and while the stream captures (the
// copy becomes a node of the graph). Copies into pinned memory (acMallocHost)
// stay asynchronous, as on CUDA. Errors of earlier kernels are not taken:
// the next synchronising call reports them. The copy is ordered after the
// work queued before the call; unlike CUDA's, which occupies the stream,
// work another thread queues on the same stream meanwhile may run alongside
// it (that thread's launches are unordered with this call anyway). The
// profiler shows the copy on the stream's row, as it shows the kernels a
// waiting host runs (StreamWorkScope).
#include "activity.h"
#include "copy_engine.h"
#include "graph.h"
#include "memory.h"
#include "stream.h"


#include <array>
#include <cstddef>
#include <utility>

namespace accinte {
namespace {

bool isDevice(const AllocationRef& a) {
  return a != nullptr && a->type == acMemoryTypeDevice;
}

// A validated operation: the registered allocations it touches (device or
// pinned), which are kept alive and opened for access while it runs. Held in
// place (two at most: the destination's and the source's, null where an end
// is memory the runtime did not allocate), so that planning a copy does not
// allocate: .item() plans one per call.
struct Plan {
  std::array<AllocationRef, 2> touched;
  bool toPageableHost = false;  // dst is host memory the runtime did not allocate
  // For activity records: the direction (acMemcpyDefault resolved) and the
  // device the operation belongs to (the source's for a device-to-device
  // copy), -1 when it touches no device memory.
  acMemcpyKind direction = acMemcpyHostToHost;
  int device = -1;

  // For a synchronous operation: refused (see checkUnsafeCall) while a
  // capture forbids waiting for a device it touches.
  acError_t checkCaptures() const {
    for (const AllocationRef& a : touched) {
      if (isDevice(a)) {
        if (const acError_t e = checkUnsafeCall(a->device); e != acSuccess) {
          return e;
        }
      }
    }
    return acSuccess;
  }

  // Waits for the streams of every device the operation touches.
  void waitForDevices() const {
    int waited = -1;
    for (const AllocationRef& a : touched) {
      if (isDevice(a) && a->device != waited) {
        waitDeviceIdle(a->device);
        waited = a->device;  // two endpoints at most: skipping a repeat suffices
      }
    }
  }
};

// `kind` as the caller passed it: any int (see callerInt).
acError_t planCopy(void* dst, const void* src, size_t count, int kind, Plan* plan) {
  if (dst == nullptr || src == nullptr) {
    return acErrorInvalidValue;
  }
  AllocationRef to;
  AllocationRef from;
  findAllocations(dst, &to, src, &from);
  const bool toDevice = isDevice(to);
  const bool fromDevice = isDevice(from);
  bool agrees = false;
  switch (kind) {
    case acMemcpyHostToHost: agrees = !toDevice && !fromDevice; break;
    case acMemcpyHostToDevice: agrees = toDevice && !fromDevice; break;
    case acMemcpyDeviceToHost: agrees = !toDevice && fromDevice; break;
    case acMemcpyDeviceToDevice: agrees = toDevice && fromDevice; break;
    case acMemcpyDefault: agrees = true; break;
    default: return acErrorInvalidMemcpyDirection;
  }
  if (!agrees) {
    return acErrorInvalidMemcpyDirection;
  }
  if ((toDevice && !to->contains(dst, count)) || (fromDevice && !from->contains(src, count))) {
    return acErrorInvalidValue;  // the range runs past the end of its allocation
  }
  plan->toPageableHost = to == nullptr;
  plan->direction = toDevice ? (fromDevice ? acMemcpyDeviceToDevice : acMemcpyHostToDevice)
                             : (fromDevice ? acMemcpyDeviceToHost : acMemcpyHostToHost);
  plan->device = fromDevice ? from->device : (toDevice ? to->device : -1);
  plan->touched = {std::move(to), std::move(from)};
  return acSuccess;
}

acError_t planMemset(void* devPtr, size_t count, Plan* plan) {
  AllocationRef target = findAllocation(devPtr);
  if (!isDevice(target)) {
    return acErrorInvalidDevicePointer;
  }
  if (!target->contains(devPtr, count)) {
    return acErrorInvalidValue;
  }
  plan->device = target->device;
  plan->touched[0] = std::move(target);
  return acSuccess;
}

acError_t runCopy(void* dst, const void* src, size_t count, const Plan& plan,
                  uint64_t correlation) {
  const AccessWindow window(plan.touched.data(), plan.touched.size());
  if (window.status() != acSuccess) {
    return window.status();
  }
  // One record for the whole copy, however the copy engines split it.
  const DeviceActivity record(acActivityKindMemcpy, correlation, plan.device, nullptr, count,
                              plan.direction);
  if (plan.toPageableHost) {
    adviseHugePages(dst, count);
  }
  // Overlapping ranges (a copy within one allocation) are handled: memmove.
  copyBytes(dst, src, count);
  return acSuccess;
}

acError_t runMemset(void* devPtr, int value, size_t count, const Plan& plan,
                    uint64_t correlation) {
  const AccessWindow window(plan.touched.data(), plan.touched.size());
  if (window.status() != acSuccess) {
    return window.status();
  }
  const DeviceActivity record(acActivityKindMemset, correlation, plan.device, nullptr, count);
  setBytes(devPtr, value, count);  // uses the low byte of value, as cudaMemset
  return acSuccess;
}

}  // namespace
}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acMemcpy(void* dst, const void* src, size_t count, acMemcpyKind kind) {
  return blockingApiCall([&] {
    if (count == 0) {
      return acSuccess;
    }
    const RuntimeActivity activity("acMemcpy");
    Plan plan;
    if (const acError_t e = planCopy(dst, src, count, callerInt(kind), &plan); e != acSuccess) {
      return e;
    }
    if (const acError_t e = plan.checkCaptures(); e != acSuccess) {
      return e;
    }
    plan.waitForDevices();
    return runCopy(dst, src, count, plan, activity.correlation());
  });
}

acError_t acMemcpyAsync(void* dst, const void* src, size_t count, acMemcpyKind kind,
                        acStream_t stream) {
  return apiCall([&] {
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    if (count == 0) {
      return acSuccess;
    }
    const RuntimeActivity activity("acMemcpyAsync");
    Plan plan;
    if (const acError_t e = planCopy(dst, src, count, callerInt(kind), &plan); e != acSuccess) {
      return e;
    }
    if (plan.toPageableHost && !onWorkerThread() &&
        (!capturesUnderway() || s->capture() == nullptr)) {
      // Note [accinte copies into pageable memory]
      s->waitIdle();
      const StreamWorkScope onStream(s.get());  // the profiler's row: the stream's
      return runCopy(dst, src, count, plan, activity.correlation());
    }
    return s->enqueue([dst, src, count, plan = std::move(plan),
                       correlation = activity.correlation()] {
      return runCopy(dst, src, count, plan, correlation);
    }, "memcpy", Stream::WhenFull::kWait);
  });
}

acError_t acMemset(void* devPtr, int value, size_t count) {
  return blockingApiCall([&] {
    if (count == 0) {
      return acSuccess;
    }
    const RuntimeActivity activity("acMemset");
    Plan plan;
    if (const acError_t e = planMemset(devPtr, count, &plan); e != acSuccess) {
      return e;
    }
    if (const acError_t e = plan.checkCaptures(); e != acSuccess) {
      return e;
    }
    plan.waitForDevices();
    return runMemset(devPtr, value, count, plan, activity.correlation());
  });
}

acError_t acMemsetAsync(void* devPtr, int value, size_t count, acStream_t stream) {
  return apiCall([&] {
    std::shared_ptr<Stream> s;
    if (const acError_t e = resolveStream(stream, &s); e != acSuccess) {
      return e;
    }
    if (count == 0) {
      return acSuccess;
    }
    const RuntimeActivity activity("acMemsetAsync");
    Plan plan;
    if (const acError_t e = planMemset(devPtr, count, &plan); e != acSuccess) {
      return e;
    }
    return s->enqueue([devPtr, value, count, plan = std::move(plan),
                       correlation = activity.correlation()] {
      return runMemset(devPtr, value, count, plan, correlation);
    }, "memset", Stream::WhenFull::kWait);
  });
}

}  // extern "C"
