// virtual_memory.cpp: acMemAddressReserve / acMemCreate / acMemMap and their
// inverses, the CUDA driver's virtual memory management (cuMem*).
//
// Note [accinte virtual memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A reservation is an inaccessible anonymous mapping (PROT_NONE,
// MAP_NORESERVE), registered whole as one device allocation of Backing::
// Reserved, so that kernels, copies and acPointerGetAttributes find any
// pointer into it. Physical memory (a handle) is capacity taken from the
// device, with no memory of its own until it is mapped: acMemMap replaces
// the handle's range of the reservation with fresh read/write pages
// (MAP_FIXED), acMemUnmap puts inaccessible pages back, and the contents go
// with them. So a handle lives at one address at a time, which is all an
// allocation that grows in place needs; CUDA can also map one handle at
// several addresses. The handles and their mappings are guarded by
// allocationTableMutex(), as the registry is.
#include "memory.h"

#include "graph.h"

#include <sys/mman.h>

#include <iterator>
#include <map>

namespace accinte {
namespace {

constexpr size_t kGranularity = size_t{2} << 20;

struct PhysicalMemory {
  size_t size = 0;
  int device = -1;
  void* mappedAt = nullptr;  // null while unmapped
  bool released = false;     // acMemRelease was called: gone once unmapped
};

struct Handles {
  std::map<acMemGenericAllocationHandle_t, PhysicalMemory> byHandle;
  std::map<uintptr_t, acMemGenericAllocationHandle_t> byAddress;  // mapped ones
  acMemGenericAllocationHandle_t next = 1;
};

Handles& handles() {  // guarded by allocationTableMutex()
  static auto* h = new Handles();
  return *h;
}

bool granular(size_t size) {
  return size > 0 && size % kGranularity == 0;
}

// The reservation holding [p, p + size), or null. Caller holds the lock.
AllocationRef reservationOf(const void* p, size_t size) {
  AllocationRef a = findAllocationLocked(p);
  return a != nullptr && a->backing == Backing::Reserved && a->contains(p, size) ? a : nullptr;
}

// Gives a released, unmapped handle's capacity back. Caller holds the lock.
void forgetIfDone(acMemGenericAllocationHandle_t handle) {
  auto it = handles().byHandle.find(handle);
  if (it->second.released && it->second.mappedAt == nullptr) {
    allocationTable().used[it->second.device] -= it->second.size;
    handles().byHandle.erase(it);
  }
}

}  // namespace
}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acMemGetAllocationGranularity(size_t* granularity) {
  return apiCall([&] {
    if (granularity == nullptr) {
      return acErrorInvalidValue;
    }
    *granularity = kGranularity;
    return acSuccess;
  });
}

acError_t acMemAddressReserve(void** ptr, size_t size) {
  return apiCall([&] {
    if (ptr == nullptr || !granular(size)) {
      return acErrorInvalidValue;
    }
    void* base = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED) {
      return acErrorMemoryAllocation;
    }
    auto a = std::make_shared<Allocation>();
    a->base = base;
    a->size = a->reserved = size;
    a->device = currentDevice();
    a->backing = Backing::Reserved;  // ~Allocation unmaps the whole range
    a->protectable = config().strict;
    a->accessible = false;           // PROT_NONE, as updateProtection sees it
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    if (const acError_t e = updateProtection(*a); e != acSuccess) {
      return e;  // `a` unmaps itself
    }
    allocationTable().add(std::move(a));
    markInitialized();
    *ptr = base;
    return acSuccess;
  });
}

acError_t acMemAddressFree(void* ptr, size_t size) {
  return apiCall([&] {
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    const AllocationRef a = reservationOf(ptr, size);
    if (a == nullptr || a->base != ptr || a->size != size) {
      return acErrorInvalidValue;
    }
    const auto start = reinterpret_cast<uintptr_t>(ptr);
    const auto mapped = handles().byAddress.lower_bound(start);
    if (mapped != handles().byAddress.end() && mapped->first < start + size) {
      return acErrorInvalidValue;  // unmap first, as CUDA requires
    }
    allocationTable().remove(allocationTable().byBase.find(start));
    return acSuccess;  // queued work holding `a` keeps the range until it has run
  });
}

acError_t acMemCreate(acMemGenericAllocationHandle_t* handle, size_t size) {
  return apiCall([&] {
    if (handle == nullptr || !granular(size)) {
      return acErrorInvalidValue;
    }
    const int device = currentDevice();
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    AllocationTable& table = allocationTable();
    if (size > config().deviceMemory - table.used[device]) {
      return acErrorMemoryAllocation;
    }
    table.used[device] += size;
    *handle = handles().next++;
    handles().byHandle[*handle] = PhysicalMemory{size, device};
    markInitialized();
    return acSuccess;
  });
}

acError_t acMemRelease(acMemGenericAllocationHandle_t handle) {
  return apiCall([&] {
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    const auto it = handles().byHandle.find(handle);
    if (it == handles().byHandle.end() || it->second.released) {
      return acErrorInvalidValue;
    }
    it->second.released = true;
    forgetIfDone(handle);
    return acSuccess;
  });
}

acError_t acMemMap(void* ptr, size_t size, acMemGenericAllocationHandle_t handle) {
  return apiCall([&] {
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    const auto it = handles().byHandle.find(handle);
    const AllocationRef reservation = reservationOf(ptr, size);
    if (it == handles().byHandle.end() || it->second.released || it->second.mappedAt != nullptr ||
        it->second.size != size || reservation == nullptr ||
        reservation->device != it->second.device) {
      return acErrorInvalidValue;
    }
    const auto start = reinterpret_cast<uintptr_t>(ptr);
    auto after = handles().byAddress.lower_bound(start);
    const bool overlapsNext = after != handles().byAddress.end() && after->first < start + size;
    const bool overlapsPrevious =
        after != handles().byAddress.begin() &&
        std::prev(after)->first + handles().byHandle.at(std::prev(after)->second).size > start;
    const auto offset = start - reinterpret_cast<uintptr_t>(reservation->base);
    if (overlapsNext || overlapsPrevious || offset % kGranularity != 0) {
      return acErrorInvalidValue;
    }
    // Strict mode: protected at once unless a window is open, as the rest of
    // the reservation is (access_window.cpp).
    const int protection = reservation->protectable && !reservation->accessible
                               ? PROT_NONE : PROT_READ | PROT_WRITE;
    if (mmap(ptr, size, protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
      return acErrorMemoryAllocation;
    }
    it->second.mappedAt = ptr;
    handles().byAddress[start] = handle;
    return acSuccess;
  });
}

acError_t acMemUnmap(void* ptr, size_t size) {
  return blockingApiCall([&] {
    int device = -1;
    {
      std::lock_guard<std::mutex> lock(allocationTableMutex());
      const AllocationRef reservation = reservationOf(ptr, size);
      if (reservation == nullptr) {
        return acErrorInvalidValue;
      }
      device = reservation->device;
    }
    // Like acFree: work already queued on the device may still use it.
    if (const acError_t e = checkUnsafeCall(device); e != acSuccess) {
      return e;
    }
    waitDeviceIdle(device);
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    // The range must be whole mappings, side by side.
    const auto start = reinterpret_cast<uintptr_t>(ptr);
    uintptr_t at = start;
    for (auto it = handles().byAddress.find(start); at < start + size; ++it) {
      if (it == handles().byAddress.end() || it->first != at) {
        return acErrorInvalidValue;
      }
      at += handles().byHandle.at(it->second).size;
    }
    if (at != start + size) {
      return acErrorInvalidValue;
    }
    if (mmap(ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
             0) == MAP_FAILED) {
      return acErrorMemoryAllocation;
    }
    for (auto it = handles().byAddress.find(start); it != handles().byAddress.end() &&
                                                    it->first < start + size;) {
      const acMemGenericAllocationHandle_t handle = it->second;
      handles().byHandle.at(handle).mappedAt = nullptr;
      it = handles().byAddress.erase(it);
      forgetIfDone(handle);
    }
    return acSuccess;
  });
}

}  // extern "C"
