// memory.h: device and pinned allocations, their registry, and the strict-mode
// access windows (internal).
//
// Every live allocation is owned by the registry through a shared reference.
// Queued work that touches an allocation holds another reference, so memory
// freed by the user while a copy is still queued on some stream (possibly a
// stream of another device, which acFree does not wait for) stays mapped until
// that copy has run. Capacity is returned at acFree itself.
#ifndef ACCINTE_SRC_MEMORY_H_
#define ACCINTE_SRC_MEMORY_H_

#include "runtime.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace accinte {

// Where an allocation's memory came from, so that ~Allocation can return it.
enum class Backing {
  Heap,       // posix_memalign: pinned host memory
  Private,    // an anonymous private mmap: device memory that cannot be shared
  Shared,     // an mmap of a memfd: device memory, shareable (see Note [IPC] in ipc.cpp)
  Reserved,   // an acMemAddressReserve range: its mapped parts are device memory
};

// One acMalloc, acMallocHost or acIpcOpenMemHandle block.
struct Allocation {
  void* base = nullptr;
  size_t size = 0;           // bytes the caller asked for
  size_t reserved = 0;       // bytes actually mapped (mappings are rounded to pages)
  int device = -1;           // owning device; -1 for pinned host memory
  acMemoryType type = acMemoryTypeDevice;
  Backing backing = Backing::Heap;
  bool protectable = false;  // strict mode: PROT_NONE outside access windows

  // Sharing (Backing::Shared). The memfd stays open for the allocation's
  // life, so that another process can open it through /proc/<pid>/fd/<fd>.
  int fd = -1;
  uint64_t shareNonce = 0;   // with shareSerial, names the memfd ("accinte:<nonce>:<serial>")
  uint64_t shareSerial = 0;  // and tells a live handle from a stale one
  bool imported = false;     // mapped by acIpcOpenMemHandle: released by acIpcCloseMemHandle

  // Strict-mode protection, guarded by allocationTableMutex().
  int windows = 0;           // open AccessWindows over this allocation
  bool accessible = true;    // current protection is read/write

  Allocation() = default;
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation();             // returns the memory to the system

  bool contains(const void* p, size_t count) const {
    const auto start = reinterpret_cast<uintptr_t>(base);
    const auto at = reinterpret_cast<uintptr_t>(p);
    return at >= start && at - start <= size && count <= size - (at - start);
  }
};

using AllocationRef = std::shared_ptr<Allocation>;

// The registry. Every field is guarded by allocationTableMutex(), except
// that `generation` may also be read without it.
struct AllocationTable {
  std::map<uintptr_t, AllocationRef> byBase;  // live allocations by base address
  std::vector<size_t> used;                   // bytes allocated per device
  int kernelWindows = 0;                      // open KernelAccessWindows (strict mode)
  // Raised by every change to byBase (add, remove): see Note [accinte
  // finding allocations without the lock] in memory.cpp.
  std::atomic<uint64_t> generation{0};

  void add(AllocationRef a) {
    const auto base = reinterpret_cast<uintptr_t>(a->base);
    byBase.emplace(base, std::move(a));
    generation.fetch_add(1, std::memory_order_release);
  }
  void remove(std::map<uintptr_t, AllocationRef>::iterator it) {
    byBase.erase(it);
    generation.fetch_add(1, std::memory_order_release);
  }
};
AllocationTable& allocationTable();

// Device memory (ipc.cpp): maps `a.reserved` bytes of a new memfd, shared, and
// fills base, fd and the share ids. False, with nothing to undo, when the
// descriptor budget is spent or the system refuses; the caller then falls
// back to private memory. See Note [IPC].
bool mapShared(Allocation& a);
// A random number fixed for the process's life, which names its shareable
// memfds (memory and events): tells them apart from those of an earlier
// process that had the same pid (ipc.cpp).
uint64_t processNonce();

// Closes a shared allocation's memfd (~Allocation) and returns its slot to
// the descriptor budget.
void closeShared(Allocation& a);

// The descriptor budget of shareable memfds (ipc.cpp, Note [IPC]): memory,
// imported memory and interprocess event pages, exported or imported.
// takeSharedDescriptor counts one more and returns true, or returns false
// with nothing counted when the budget is spent; giveSharedDescriptor
// returns one once its descriptor is closed.
bool takeSharedDescriptor();
void giveSharedDescriptor();

// The device allocation starting exactly at `p`, or null. Takes
// allocationTableMutex().
AllocationRef findDeviceBase(void* p);

// Removes the device allocation starting exactly at `p` from the registry and
// returns its capacity (unless imported); null if there is none. The memory
// goes when the last reference does. Takes allocationTableMutex().
AllocationRef unregisterDevice(void* p);

// The live allocation containing `p` (interior pointers included), or null.
// Takes allocationTableMutex().
AllocationRef findAllocation(const void* p);
// findAllocation for a caller that holds allocationTableMutex().
AllocationRef findAllocationLocked(const void* p);
// findAllocation of two pointers (a copy's ends). Without the lock when the
// thread asked about them last and the registry has not changed since: Note
// [accinte finding allocations without the lock].
void findAllocations(const void* p, AllocationRef* ofP, const void* q, AllocationRef* ofQ);

// Strict mode: makes the allocation's protection match its windows (read/write
// while any window covers it, PROT_NONE otherwise). Caller holds
// allocationTableMutex(). acErrorMemoryAllocation if mprotect fails. A no-op
// outside strict mode and for pinned host memory.
acError_t updateProtection(Allocation& allocation);

// RAII: while alive, host code may read and write the given allocations, as
// the runtime's copies do. Windows are reference-counted per allocation, so
// concurrent windows over one allocation nest: the first to open makes it
// accessible, the last to close protects it again. Free outside strict mode.
class AccessWindow {
 public:
  // Over allocations[0, count); null entries are skipped.
  AccessWindow(const AllocationRef* allocations, size_t count);
  ~AccessWindow();
  AccessWindow(const AccessWindow&) = delete;
  AccessWindow& operator=(const AccessWindow&) = delete;

  // acSuccess, or why the window could not be opened (nothing is open then).
  acError_t status() const { return status_; }

 private:
  std::vector<AllocationRef> opened_;
  acError_t status_ = acSuccess;
};

// RAII: while alive, every device allocation is accessible, including ones
// created meanwhile. Wraps a kernel, which may touch any device memory.
class KernelAccessWindow {
 public:
  KernelAccessWindow();
  ~KernelAccessWindow();
  KernelAccessWindow(const KernelAccessWindow&) = delete;
  KernelAccessWindow& operator=(const KernelAccessWindow&) = delete;

  acError_t status() const { return status_; }

 private:
  bool open_ = false;
  acError_t status_ = acSuccess;
};

}  // namespace accinte

#endif  // ACCINTE_SRC_MEMORY_H_
