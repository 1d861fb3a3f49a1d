// ipc_event.cpp: interprocess events (cudaEventInterprocess,
// cudaIpcGetEventHandle, cudaIpcOpenEventHandle).
//
// Note [IPC events]
// An event's records are Completions, objects of one process. For another
// process to wait for them, an event created with acEventInterprocess also
// owns a small shared page: a memfd mapped MAP_SHARED, opened by importers
// through /proc/<pid>/fd/<fd> and checked by name exactly as device memory is
// (Note [IPC] in ipc.cpp). The page holds two numbers:
//   - `recorded`, the number of the exporter's latest record, written by
//     acEventRecord when it queues the record;
//   - `published`, the highest number such that it and every earlier record
//     have completed, written by a task the record queues on its stream right
//     after its marker. Records on different streams can complete out of
//     order; publishing in order makes "published >= n" mean "record n and
//     all before it are done": never early, at worst later than needed.
// An importer's wait (acStreamWaitEvent's task, acEventSynchronize) reads
// `recorded` when it is made, then sleeps on a futex word of the page until
// `published` reaches it: a recorded-again event does not move a wait
// already made, as for a local event.
//
// A dead exporter must not hang its importers. A waiter woken by no
// publication within kLivenessPeriod looks at the exporter's descriptor
// through /proc/<pid>/fd/<fd>, as opening the handle did: the kernel closes
// it when the process ends, whatever the way, and a later process with the
// same pid cannot have a memfd of the same name. If it is gone, the waiter
// gives up with acErrorMapBufferObjectFailed, after a last look at
// `published` (written before the descriptor can go). The exporter keeps
// the descriptor, like the page, until its event is destroyed and every
// record task has run (they share ownership), so a live exporter always has
// a record outstanding or published. (A lock the kernel drops at exit would
// do too, but a child forked by the exporter would inherit and keep it.)
//
// Only the exporter records; an opened event waits. (CUDA lets an importer
// record too; nothing in PyTorch does, and numbering records from several
// processes would need a cross-process ordering of completions.)
#include "ipc_event.h"

#include "event.h"
#include "memory.h"
#include "runtime.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

namespace accinte {

// LITERALINCLUDE START: IPC EVENT PAGE
// The shared page. Plain words, the same in every process.
struct IpcEventPage {
  uint64_t magic;                    // kPageMagic once initialized
  uint64_t nonce;                    // the memfd's name, repeated
  uint64_t serial;
  std::atomic<uint64_t> recorded;    // latest record's number
  std::atomic<uint64_t> published;   // every record up to this one completed
  std::atomic<uint32_t> wakeups;     // futex word: bumped at each publication
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free,
              "the shared words must be plain lock-free words");
// LITERALINCLUDE END: IPC EVENT PAGE

namespace {

// What an acIpcEventHandle_t holds.
struct EventHandleData {
  uint32_t magic;    // kHandleMagic
  uint32_t version;  // kVersion
  int32_t pid;       // exporting process
  int32_t fd;        // the page's memfd in that process
  int32_t device;    // device the event was created on
  uint32_t unused;
  uint64_t nonce;    // memfd name: "accinte-event:<nonce>:<serial>"
  uint64_t serial;
};
static_assert(sizeof(EventHandleData) <= sizeof(acIpcEventHandle_t), "handle too small");

constexpr uint32_t kHandleMagic = 0x45494341;  // "ACIE"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPageMagic = 0x4547415045494341;  // "ACIEPAGE"
constexpr size_t kPageBytes = 4096;
// How long a waiter sleeps between two looks at the exporter's liveness.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

std::string pageName(uint64_t nonce, uint64_t serial) {
  return "accinte-event:" + std::to_string(nonce) + ":" + std::to_string(serial);
}

// True if descriptor `fd` of process `pid` (0: this one) is the memfd named
// after the handle (see hasName in ipc.cpp).
bool namesPage(pid_t pid, int fd, const EventHandleData& h) {
  char link[64];
  if (pid == 0) {
    std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  } else {
    std::snprintf(link, sizeof(link), "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  }
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n <= 0) {
    return false;
  }
  target[n] = '\0';
  const std::string expected = "/memfd:" + pageName(h.nonce, h.serial) + " ";
  return std::strncmp(target, expected.c_str(), expected.size()) == 0;
}

IpcEventPage* mapPage(int fd) {
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<IpcEventPage*>(p);
}

// A futex on a word of a MAP_SHARED page: not FUTEX_PRIVATE, so that
// processes meet on it.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds t) {
  timespec ts{static_cast<time_t>(t.count() / 1000000000),
              static_cast<long>(t.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

acError_t IpcEvent::create(int device, std::shared_ptr<IpcEvent>* out) {
  static std::atomic<uint64_t> serials{0};
  const uint64_t serial = serials.fetch_add(1) + 1;
  const int fd = memfd_create(pageName(processNonce(), serial).c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    return acErrorMemoryAllocation;
  }
  IpcEventPage* page = nullptr;
  if (ftruncate(fd, kPageBytes) != 0 || (page = mapPage(fd)) == nullptr) {
    close(fd);
    return acErrorMemoryAllocation;
  }
  // The fresh page is zero: the counters start at 0 (never recorded).
  page->nonce = processNonce();
  page->serial = serial;
  std::atomic_thread_fence(std::memory_order_release);
  page->magic = kPageMagic;
  out->reset(new IpcEvent(device, /*imported=*/false, fd, page, /*exporter=*/{}));
  return acSuccess;
}

acError_t IpcEvent::open(const acIpcEventHandle_t& handle, std::shared_ptr<IpcEvent>* out) {
  EventHandleData h{};
  std::memcpy(&h, handle.reserved, sizeof(h));
  if (h.magic != kHandleMagic || h.version != kVersion || h.pid <= 0 || h.fd < 0) {
    return acErrorMapBufferObjectFailed;
  }
  if (!isValidDevice(h.device)) {
    return acErrorInvalidDevice;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return errno == EMFILE || errno == ENFILE ? acErrorMemoryAllocation
                                              : acErrorMapBufferObjectFailed;
  }
  IpcEventPage* page = namesPage(0, fd, h) ? mapPage(fd) : nullptr;
  if (page == nullptr || page->magic != kPageMagic || page->nonce != h.nonce ||
      page->serial != h.serial) {
    if (page != nullptr) {
      munmap(page, kPageBytes);
    }
    close(fd);
    return acErrorMapBufferObjectFailed;  // the descriptor now names something else
  }
  out->reset(new IpcEvent(h.device, /*imported=*/true, fd, page,
                          Exporter{h.pid, h.fd}));
  return acSuccess;
}

IpcEvent::~IpcEvent() {
  munmap(page_, kPageBytes);
  close(fd_);  // the exporter's: importers see the event gone from here on
}

void IpcEvent::exportHandle(acIpcEventHandle_t* handle) const {
  EventHandleData h{};
  h.magic = kHandleMagic;
  h.version = kVersion;
  h.pid = static_cast<int32_t>(getpid());
  h.fd = fd_;
  h.device = device_;
  h.nonce = page_->nonce;
  h.serial = page_->serial;
  std::memset(handle->reserved, 0, sizeof(handle->reserved));
  std::memcpy(handle->reserved, &h, sizeof(h));
}

// LITERALINCLUDE START: IPC EVENT PUBLISH
uint64_t IpcEvent::beginRecord() {
  std::lock_guard<std::mutex> lock(mutex_);
  return page_->recorded.fetch_add(1) + 1;
}

void IpcEvent::finishRecord(uint64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation <= published_ || finishedEarly_.count(generation) != 0) {
      return;  // published already (acEventRecord published it itself)
    }
    if (generation != published_ + 1) {
      finishedEarly_.insert(generation);  // an earlier record is still pending
      return;
    }
    published_ = generation;
    while (!finishedEarly_.empty() && *finishedEarly_.begin() == published_ + 1) {
      published_ = *finishedEarly_.begin();
      finishedEarly_.erase(finishedEarly_.begin());
    }
    page_->published.store(published_);
    page_->wakeups.fetch_add(1);
  }
  futexWakeAll(&page_->wakeups);
}
// LITERALINCLUDE END: IPC EVENT PUBLISH

uint64_t IpcEvent::latest() const {
  return page_->recorded.load();
}

bool IpcEvent::exporterAlive() const {
  EventHandleData h{};
  h.nonce = page_->nonce;
  h.serial = page_->serial;
  return namesPage(exporter_.pid, exporter_.fd, h);
}

acError_t IpcEvent::query(uint64_t generation) const {
  if (page_->published.load() >= generation) {
    return acSuccess;
  }
  if (!imported_ || exporterAlive()) {
    return acErrorNotReady;
  }
  // Published before the lock could go: a last look decides.
  return page_->published.load() >= generation ? acSuccess : acErrorMapBufferObjectFailed;
}

// LITERALINCLUDE START: IPC EVENT WAIT
acError_t IpcEvent::wait(uint64_t generation) const {
  for (;;) {
    const uint32_t seen = page_->wakeups.load();
    if (page_->published.load() >= generation) {
      return acSuccess;
    }
    // Sleeps until a publication (or kLivenessPeriod), then looks again.
    futexWait(&page_->wakeups, seen, kLivenessPeriod);
    if (const acError_t e = query(generation); e != acErrorNotReady) {
      return e;
    }
  }
}
// LITERALINCLUDE END: IPC EVENT WAIT

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acIpcGetEventHandle(acIpcEventHandle_t* handle, acEvent_t event) {
  return apiCall([&] {
    if (handle == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<Event> e;
    if (const acError_t err = resolveEvent(event, &e); err != acSuccess) {
      return err;
    }
    if (e->ipc() == nullptr || e->imported()) {
      return acErrorInvalidResourceHandle;  // not created with acEventInterprocess here
    }
    e->ipc()->exportHandle(handle);
    return acSuccess;
  });
}

acError_t acIpcOpenEventHandle(acEvent_t* event, acIpcEventHandle_t handle) {
  return apiCall([&] {
    if (event == nullptr) {
      return acErrorInvalidValue;
    }
    std::shared_ptr<IpcEvent> ipc;
    if (const acError_t err = IpcEvent::open(handle, &ipc); err != acSuccess) {
      return err;
    }
    const int device = ipc->device();
    *event = registerEvent(std::make_shared<Event>(device, /*timing=*/false, std::move(ipc)));
    return acSuccess;
  });
}

}  // extern "C"
