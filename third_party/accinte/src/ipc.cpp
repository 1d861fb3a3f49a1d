// ipc.cpp: shareable device memory and the IPC API (cudaIpc*).
//
// Note [IPC]
// Device memory of the emulated device is host memory, which is private to
// its process unless it is created shareable. So every device allocation is
// a mapping of its own memfd (memfd_create, then mmap MAP_SHARED), and the
// runtime keeps the memfd open for the allocation's life.
//
// A handle (acIpcGetMemHandle) records the exporter's pid, the memfd's
// descriptor number in that process, the device, the sizes and the memfd's
// unique name. The importer (acIpcOpenMemHandle) opens
// /proc/<pid>/fd/<fd>, which gives it a descriptor of the same memfd (the
// kernel allows it to processes of the same user that may ptrace-read the
// exporter), checks through /proc/self/fd that the file carries the handle's
// name, so that a descriptor number reused for other memory since is
// refused, and maps it MAP_SHARED: both processes now map the same pages.
//
// Lifetime. The pages of a memfd live as long as any descriptor or mapping
// refers to it. The importer keeps both until acIpcCloseMemHandle, so the
// memory outlives the exporter's acFree and even the exporter's exit without
// any reference counting of our own: the kernel counts. (CUDA needs a
// cross-process reference count, which PyTorch keeps in a shared file,
// because freeing device memory there really frees it.) The capacity goes
// back to the exporter's device at its acFree, as the accounting is per
// process. What the kernel cannot do is keep a handle openable after the
// exporter closed its descriptor: a handle in flight must be opened before
// the exporter frees the allocation, the same rule as CUDA's.
//
// Strict mode. Each process protects its own mapping: the importer's is
// PROT_NONE outside its access windows exactly like the exporter's, so host
// code faults on either side.
//
// Descriptors. One per live allocation, one per opened handle (until
// acIpcCloseMemHandle) and one per page of interprocess events, exported or
// opened (Note [IPC event pages] in ipc_event.cpp). So that IPC can never
// starve the process of descriptors for files and sockets, all of them
// together use at most half of RLIMIT_NOFILE's soft limit: past that, new
// allocations are private and refuse to be exported (acErrorNotSupported),
// and opening a handle fails with acErrorIpcDescriptorsExhausted, as it does
// when the system refuses a descriptor.
// Memfds are created close-on-exec, and mappings are not inherited by a
// forked child (MADV_DONTFORK), which could not use the runtime anyway.
#include "memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace accinte {
namespace {

// LITERALINCLUDE START: IPC HANDLE
// What an acIpcMemHandle_t holds. Plain data, the same in every process.
struct HandleData {
  uint32_t magic;     // kMagic: made by acIpcGetMemHandle
  uint32_t version;   // kMemHandleVersion
  int32_t pid;        // exporting process
  int32_t fd;         // the memfd's descriptor in that process
  int32_t device;     // device the memory belongs to
  uint32_t unused;
  uint64_t size;      // bytes the allocation was asked for
  uint64_t reserved;  // bytes of the memfd
  uint64_t nonce;     // memfd name: "accinte:<nonce>:<serial>"
  uint64_t serial;
};
static_assert(sizeof(HandleData) <= sizeof(acIpcMemHandle_t), "handle too small");
// LITERALINCLUDE END: IPC HANDLE

constexpr uint32_t kMagic = 0x50494341;  // "ACIP"
constexpr uint32_t kMemHandleVersion = 1;

std::string memfdName(uint64_t nonce, uint64_t serial) {
  return "accinte:" + std::to_string(nonce) + ":" + std::to_string(serial);
}

// Descriptors of shareable memfds held, against the budget (see Note [IPC]).
std::atomic<long> gSharedDescriptors{0};

long descriptorBudget() {
  static const long budget = [] {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
      return 1L << 16;
    }
    return static_cast<long>(limit.rlim_cur / 2);
  }();
  return budget;
}

// Maps `a.reserved` bytes of `fd`, shared and read/write, unless a kernel
// window or strict mode says otherwise later. Fills base and fd.
bool mapDescriptor(Allocation& a, int fd) {
  void* p = mmap(nullptr, a.reserved, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return false;
  }
  (void)madvise(p, a.reserved, MADV_DONTFORK);  // an optimisation of fork; may fail harmlessly
  a.base = p;
  a.fd = fd;
  a.backing = Backing::Shared;
  return true;
}

// True if `fd` is the memfd named after the handle.
bool hasName(int fd, const HandleData& h) {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n <= 0) {
    return false;
  }
  target[n] = '\0';
  // The kernel shows "/memfd:<name> (deleted)".
  const std::string expected = "/memfd:" + memfdName(h.nonce, h.serial) + " ";
  return std::strncmp(target, expected.c_str(), expected.size()) == 0;
}

acError_t openHandle(void** devPtr, const acIpcMemHandle_t& handle, unsigned int flags) {
  if (devPtr == nullptr || (flags & ~acIpcMemLazyEnablePeerAccess) != 0) {
    return acErrorInvalidValue;
  }
  HandleData h{};
  std::memcpy(&h, handle.reserved, sizeof(h));
  if (h.magic != kMagic || h.version != kMemHandleVersion || h.size == 0 || h.reserved < h.size) {
    return acErrorMapBufferObjectFailed;
  }
  if (!isValidDevice(h.device)) {
    return acErrorInvalidDevice;
  }
  if (!takeSharedDescriptor()) {
    return acErrorIpcDescriptorsExhausted;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    giveSharedDescriptor();
    return errno == EMFILE || errno == ENFILE ? acErrorIpcDescriptorsExhausted
                                              : acErrorMapBufferObjectFailed;
  }
  struct stat st {};
  if (!hasName(fd, h) || fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < h.reserved) {
    close(fd);
    giveSharedDescriptor();
    return acErrorMapBufferObjectFailed;  // the descriptor now names other memory
  }
  auto a = std::make_shared<Allocation>();
  a->size = h.size;
  a->reserved = h.reserved;
  a->device = h.device;
  a->type = acMemoryTypeDevice;
  a->protectable = config().strict;
  a->shareNonce = h.nonce;
  a->shareSerial = h.serial;
  a->imported = true;
  if (!mapDescriptor(*a, fd)) {
    close(fd);
    giveSharedDescriptor();
    return acErrorMemoryAllocation;
  }
  // From here on ~Allocation closes the descriptor and gives it back
  // through closeShared.

  std::lock_guard<std::mutex> lock(allocationTableMutex());
  if (const acError_t e = updateProtection(*a); e != acSuccess) {
    return e;  // `a` unmaps and closes itself
  }
  allocationTable().add(a);
  markInitialized();
  *devPtr = a->base;
  return acSuccess;
}

}  // namespace

uint64_t processNonce() {
  static const uint64_t nonce = [] {
    std::random_device source;
    return (static_cast<uint64_t>(source()) << 32) ^ source() ^ static_cast<uint64_t>(getpid());
  }();
  return nonce;
}

bool takeSharedDescriptor() {
  if (gSharedDescriptors.fetch_add(1) >= descriptorBudget()) {
    gSharedDescriptors.fetch_sub(1);
    return false;
  }
  return true;
}

void giveSharedDescriptor() {
  gSharedDescriptors.fetch_sub(1);
}

bool mapShared(Allocation& a) {
  if (!takeSharedDescriptor()) {
    return false;
  }
  static std::atomic<uint64_t> serials{0};
  const uint64_t serial = serials.fetch_add(1) + 1;
  const int fd = memfd_create(memfdName(processNonce(), serial).c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    giveSharedDescriptor();
    return false;
  }
  if (ftruncate(fd, static_cast<off_t>(a.reserved)) != 0 || !mapDescriptor(a, fd)) {
    close(fd);
    giveSharedDescriptor();
    return false;
  }
  a.shareNonce = processNonce();
  a.shareSerial = serial;
  return true;
}

void closeShared(Allocation& a) {
  if (a.fd >= 0) {
    (void)close(a.fd);  // the last reference to the memfd may free its pages
    a.fd = -1;
    giveSharedDescriptor();
  }
}

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acIpcGetMemHandle(acIpcMemHandle_t* handle, void* devPtr) {
  return apiCall([&] {
    if (handle == nullptr) {
      return acErrorInvalidValue;
    }
    const AllocationRef a = findAllocation(devPtr);
    if (a == nullptr || a->type != acMemoryTypeDevice) {
      return acErrorInvalidDevicePointer;
    }
    if (a->backing != Backing::Shared) {
      return acErrorNotSupported;  // allocated past the descriptor budget
    }
    HandleData h{};
    h.magic = kMagic;
    h.version = kMemHandleVersion;
    h.pid = static_cast<int32_t>(getpid());
    h.fd = a->fd;  // imported memory is re-exported through our own descriptor
    h.device = a->device;
    h.size = a->size;
    h.reserved = a->reserved;
    h.nonce = a->shareNonce;
    h.serial = a->shareSerial;
    std::memset(handle->reserved, 0, sizeof(handle->reserved));
    std::memcpy(handle->reserved, &h, sizeof(h));
    return acSuccess;
  });
}

acError_t acIpcOpenMemHandle(void** devPtr, acIpcMemHandle_t handle, unsigned int flags) {
  return apiCall([&] { return openHandle(devPtr, handle, flags); });
}

acError_t acIpcCloseMemHandle(void* devPtr) {
  return blockingApiCall([&] {
    const AllocationRef a = findDeviceBase(devPtr);
    if (a == nullptr || !a->imported) {
      return acErrorInvalidDevicePointer;
    }
    waitDeviceIdle(a->device);  // like acFree: queued work may still use it
    return unregisterDevice(devPtr) == a ? acSuccess : acErrorInvalidDevicePointer;
  });
}

}  // extern "C"
