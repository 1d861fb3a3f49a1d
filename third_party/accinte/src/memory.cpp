// memory.cpp: acMalloc / acFree, pinned host memory, per-device capacity
// accounting, acPointerGetAttributes and acMemGetInfo.
//
// Device memory is host memory owned by the runtime: every allocation is its
// own page-rounded shared mapping of a memfd, so that other processes can map
// it (see Note [IPC] in ipc.cpp) and, in strict mode, it can be protected on
// its own (see access_window.cpp). Should no descriptor be left for a memfd,
// an allocation falls back to a private anonymous mapping, which works the
// same in this process but cannot be shared.
// Pinned host memory is ordinary heap memory tracked by the registry; it is
// not actually locked, since nothing here does DMA.
#include "memory.h"

#include "graph.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <utility>

namespace accinte {
namespace {

// cudaMalloc guarantees 256-byte alignment; code tuned for it may rely on it.
// Device memory is page-aligned (a mapping of its own), pinned memory gets this.
constexpr size_t kAlignment = 256;

size_t pageSize() {
  static const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}

// Maps fresh memory for `a`. Returns false when the system has none.
bool mapMemory(Allocation& a, bool strict) {
  if (a.type == acMemoryTypeDevice) {
    const size_t page = pageSize();
    if (a.size > SIZE_MAX - page) {
      return false;
    }
    a.reserved = (a.size + page - 1) / page * page;
    a.protectable = strict;
    if (mapShared(a)) {
      return true;
    }
    // Mapped writable first so that the commit charge is taken now, while
    // failure can still be reported by acMalloc; dropping to PROT_NONE later
    // keeps the charge, so reopening a window never runs out of memory.
    void* p = mmap(nullptr, a.reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
      return false;
    }
    a.base = p;
    a.backing = Backing::Private;
    return true;
  }
  a.reserved = a.size;
  if (posix_memalign(&a.base, kAlignment, a.size) != 0) {
    a.base = nullptr;  // not to be freed by ~Allocation
    return false;
  }
  return true;
}

// Registers a new allocation of `size` bytes. For device memory the capacity
// check, the mapping and the registration happen under one lock, so two
// threads can never both fit into the last free bytes.
acError_t allocate(void** out, size_t size, acMemoryType type, int device) {
  if (out == nullptr) {
    return acErrorInvalidValue;
  }
  if (size == 0) {
    *out = nullptr;
    return acSuccess;
  }
  auto a = std::make_shared<Allocation>();
  a->size = size;
  a->type = type;
  a->device = device;

  std::lock_guard<std::mutex> lock(allocationTableMutex());
  AllocationTable& table = allocationTable();
  if (type == acMemoryTypeDevice && size > config().deviceMemory - table.used[device]) {
    return acErrorMemoryAllocation;
  }
  if (!mapMemory(*a, config().strict)) {
    return acErrorMemoryAllocation;
  }
  // A new allocation is inaccessible unless a kernel window is open.
  if (const acError_t e = updateProtection(*a); e != acSuccess) {
    return e;  // `a` unmaps itself
  }
  table.add(a);
  if (type == acMemoryTypeDevice) {
    table.used[device] += size;
  }
  markInitialized();
  *out = a->base;
  return acSuccess;
}

// Removes the allocation that starts exactly at `p` and has `type`. Returns
// the registry's reference, or null (no such allocation). The memory itself
// is released when the last reference (possibly a queued copy) is dropped.
AllocationRef unregister(void* p, acMemoryType type) {
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  AllocationTable& table = allocationTable();
  const auto it = table.byBase.find(reinterpret_cast<uintptr_t>(p));
  if (it == table.byBase.end() || it->second->type != type) {
    return nullptr;
  }
  AllocationRef a = std::move(it->second);
  table.remove(it);
  // Imported memory is its exporter's; a reservation's capacity is its
  // physical memory's (virtual_memory.cpp).
  if (type == acMemoryTypeDevice && !a->imported && a->backing != Backing::Reserved) {
    table.used[a->device] -= a->size;
  }
  return a;
}

}  // namespace

AllocationRef findDeviceBase(void* p) {
  AllocationRef a = findAllocation(p);
  return a != nullptr && a->base == p && a->type == acMemoryTypeDevice ? a : nullptr;
}

AllocationRef unregisterDevice(void* p) {
  return unregister(p, acMemoryTypeDevice);
}

Allocation::~Allocation() {
  if (base == nullptr) {
    return;
  }
  if (backing == Backing::Heap) {
    std::free(base);
  } else {
    (void)munmap(base, reserved);  // cannot fail: exactly what mmap returned
  }
  if (backing == Backing::Shared) {
    closeShared(*this);
  }
}

std::mutex& allocationTableMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

AllocationTable& allocationTable() {
  static auto* table = [] {
    auto* t = new AllocationTable();
    t->used.assign(static_cast<size_t>(config().deviceCount), 0);
    return t;
  }();
  return *table;
}

AllocationRef findAllocationLocked(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const auto& byBase = allocationTable().byBase;
  auto it = byBase.upper_bound(at);  // first allocation starting after p
  if (it == byBase.begin()) {
    return nullptr;
  }
  --it;
  const Allocation& a = *it->second;
  return at - it->first < a.size ? it->second : nullptr;
}

AllocationRef findAllocation(const void* p) {
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  return findAllocationLocked(p);
}

// Note [accinte finding allocations without the lock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every copy looks up both of its ends, and a loop of .item() copies the
// same device scalar into the same host variable each time: two lookups in
// the registry's map under its lock per call. Each thread keeps its last
// two answers with the registry's generation, which every addition and
// removal raises under the lock: an allocation found (by weak reference,
// with the range it covers), or the exact pointer that none contains. While
// the generation is unchanged the registry holds what it held when the
// answer was found, so the answer holds too and is given without the lock.
// The weak reference keeps no memory mapped. An allocation freed by another
// thread while this one looks it up may still be returned, as if the lookup
// had happened just before the free: the two calls are unordered anyway.
namespace {

struct FoundAllocation {
  uint64_t generation = UINT64_MAX;  // never a registry's: matches nothing
  uintptr_t begin = 0;               // [begin, end): the allocation's bytes,
  uintptr_t end = 0;                 // or the one pointer none contains
  bool none = false;                 // no allocation contains `begin`
  std::weak_ptr<Allocation> allocation;
};

struct FoundAllocations {
  std::array<FoundAllocation, 2> answers;
  size_t next = 0;  // the answer replaced next

  // The remembered answer for `at`, if one holds at `generation`.
  bool find(uintptr_t at, uint64_t generation, AllocationRef* out) const {
    for (const FoundAllocation& a : answers) {
      if (a.generation != generation || at - a.begin >= a.end - a.begin) {
        continue;
      }
      if (a.none) {
        *out = nullptr;
        return true;
      }
      if (auto allocation = a.allocation.lock()) {
        *out = std::move(allocation);
        return true;
      }
    }
    return false;
  }

  void remember(uintptr_t at, const AllocationRef& found, uint64_t generation) {
    FoundAllocation& a = answers[next];
    next = (next + 1) % answers.size();
    a.generation = generation;
    a.none = found == nullptr;
    if (found != nullptr) {
      a.begin = reinterpret_cast<uintptr_t>(found->base);
      a.end = a.begin + found->size;
    } else {
      a.begin = at;
      a.end = at + 1;
    }
    a.allocation = found;
  }
};

}  // namespace

void findAllocations(const void* p, AllocationRef* ofP, const void* q, AllocationRef* ofQ) {
  thread_local FoundAllocations found;
  const auto atP = reinterpret_cast<uintptr_t>(p);
  const auto atQ = reinterpret_cast<uintptr_t>(q);
  const uint64_t generation = allocationTable().generation.load(std::memory_order_acquire);
  if (found.find(atP, generation, ofP) && found.find(atQ, generation, ofQ)) {
    return;
  }
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  const uint64_t now = allocationTable().generation.load(std::memory_order_relaxed);
  *ofP = findAllocationLocked(p);
  *ofQ = findAllocationLocked(q);
  found.remember(atP, *ofP, now);
  found.remember(atQ, *ofQ, now);
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acMalloc(void** devPtr, size_t size) {
  return apiCall([&] { return allocate(devPtr, size, acMemoryTypeDevice, currentDevice()); });
}

acError_t acFree(void* devPtr) {
  return blockingApiCall([&] {
    if (devPtr == nullptr) {
      return acSuccess;
    }
    const AllocationRef a = findDeviceBase(devPtr);
    // IPC memory is released by acIpcCloseMemHandle, a reservation by acMemAddressFree.
    if (a == nullptr || a->imported || a->backing == Backing::Reserved) {
      return acErrorInvalidDevicePointer;
    }
    // Like cudaFree: work already queued on the device may still use it.
    // Waiting for a device is refused while a capture forbids it.
    if (const acError_t e = checkUnsafeCall(a->device); e != acSuccess) {
      return e;
    }
    waitDeviceIdle(a->device);
    // Another thread may have freed it while we waited.
    return unregister(devPtr, acMemoryTypeDevice) == a ? acSuccess
                                                      : acErrorInvalidDevicePointer;
  });
}

acError_t acMallocHost(void** ptr, size_t size) {
  return apiCall([&] { return allocate(ptr, size, acMemoryTypeHost, -1); });
}

acError_t acFreeHost(void* ptr) {
  return apiCall([&] {
    if (ptr == nullptr) {
      return acSuccess;
    }
    return unregister(ptr, acMemoryTypeHost) != nullptr ? acSuccess : acErrorInvalidHostPointer;
  });
}

acError_t acPointerGetAttributes(acPointerAttributes* attributes, const void* ptr) {
  return apiCall([&] {
    if (attributes == nullptr) {
      return acErrorInvalidValue;
    }
    // Unknown memory is not an error (CUDA 11+): it is plain host memory.
    *attributes = acPointerAttributes{acMemoryTypeUnregistered, -1, nullptr, nullptr, 0};
    if (const AllocationRef a = findAllocation(ptr)) {
      attributes->type = a->type;
      attributes->device = a->device;
      attributes->devicePointer = const_cast<void*>(ptr);
      attributes->basePointer = a->base;
      attributes->size = a->size;
    }
    return acSuccess;
  });
}

acError_t acMemGetInfo(size_t* free, size_t* total) {
  return apiCall([&] {
    if (free == nullptr || total == nullptr) {
      return acErrorInvalidValue;
    }
    const int device = currentDevice();
    std::lock_guard<std::mutex> lock(allocationTableMutex());
    *total = config().deviceMemory;
    *free = config().deviceMemory - allocationTable().used[device];
    return acSuccess;
  });
}

}  // extern "C"
