// access_window.cpp: strict-mode protection of device memory.
//
// In strict mode every device allocation is mapped PROT_NONE, so host code
// that dereferences a device pointer faults, as it would with real device
// memory. The runtime itself opens "access windows" around the code that
// legitimately touches device memory:
//   - AccessWindow, around a copy or memset, over the allocations it touches;
//   - KernelAccessWindow, around a launched kernel, over all device memory.
// An allocation is read/write exactly while
//   (its own window count > 0) or (the number of open kernel windows > 0),
// and both counters change under allocationTableMutex() together with the
// mprotect call, so windows opened by concurrent streams and host threads
// nest correctly whatever order they close in.
//
// Outside strict mode device memory is always accessible and windows cost
// nothing: they neither lock nor call mprotect.
#include "memory.h"

#include <sys/mman.h>

#include <utility>

namespace accinte {

// LITERALINCLUDE START: RUNTIME STRICT PROTECTION
acError_t updateProtection(Allocation& a) {
  if (!a.protectable) {
    return acSuccess;  // pinned host memory, or strict mode is off
  }
  const bool wanted = a.windows > 0 || allocationTable().kernelWindows > 0;
  if (wanted == a.accessible) {
    return acSuccess;
  }
  if (mprotect(a.base, a.reserved, wanted ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
    return acErrorMemoryAllocation;  // the kernel could not split the mapping
  }
  a.accessible = wanted;
  return acSuccess;
}
// LITERALINCLUDE END: RUNTIME STRICT PROTECTION

AccessWindow::AccessWindow(const AllocationRef* allocations, size_t count) {
  if (!config().strict) {
    return;
  }
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  for (size_t i = 0; i < count; ++i) {
    const AllocationRef& a = allocations[i];
    if (a == nullptr || !a->protectable) {
      continue;
    }
    ++a->windows;
    status_ = updateProtection(*a);
    if (status_ != acSuccess) {
      --a->windows;
      break;
    }
    opened_.push_back(a);
  }
  if (status_ != acSuccess) {
    // Close what was opened, so that a failed window leaves nothing open.
    for (AllocationRef& a : opened_) {
      --a->windows;
      (void)updateProtection(*a);
    }
    opened_.clear();
  }
}

AccessWindow::~AccessWindow() {
  if (opened_.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  for (AllocationRef& a : opened_) {
    --a->windows;
    // Should re-protecting fail, the memory merely stays accessible: strict
    // mode becomes less strict, but nothing that worked stops working.
    (void)updateProtection(*a);
  }
}

KernelAccessWindow::KernelAccessWindow() {
  if (!config().strict) {
    return;
  }
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  AllocationTable& table = allocationTable();
  ++table.kernelWindows;
  for (auto& entry : table.byBase) {
    status_ = updateProtection(*entry.second);
    if (status_ != acSuccess) {
      break;
    }
  }
  if (status_ != acSuccess) {
    --table.kernelWindows;
    for (auto& entry : table.byBase) {
      (void)updateProtection(*entry.second);
    }
    return;
  }
  open_ = true;
}

KernelAccessWindow::~KernelAccessWindow() {
  if (!open_) {
    return;
  }
  std::lock_guard<std::mutex> lock(allocationTableMutex());
  AllocationTable& table = allocationTable();
  --table.kernelWindows;
  for (auto& entry : table.byBase) {
    (void)updateProtection(*entry.second);  // on failure: see ~AccessWindow
  }
}

}  // namespace accinte
