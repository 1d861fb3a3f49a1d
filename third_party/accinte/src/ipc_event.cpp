// ipc_event.cpp: interprocess events (cudaEventInterprocess,
// cudaIpcGetEventHandle, cudaIpcOpenEventHandle).
//
// Note [IPC events]
// An event's records are Completions, objects of one process. For another
// process to wait for them, an event created with acEventInterprocess also
// owns a slot of a shared page: a memfd mapped MAP_SHARED, opened by
// importers through /proc/<pid>/fd/<fd> and checked by name exactly as device
// memory is (Note [IPC] in ipc.cpp; Note [IPC event pages] below for how
// pages are shared out). The slot holds two numbers:
//   - `recorded`, the number of the exporter's latest record, written by
//     acEventRecord when it queues the record;
//   - `published`, the highest number such that it and every earlier record
//     have completed, written by a task the record queues on its stream right
//     after its marker. Records on different streams can complete out of
//     order; publishing in order makes "published >= n" mean "record n and
//     all before it are done": never early, at worst later than needed.
// An importer's wait (acStreamWaitEvent's task, acEventSynchronize) reads
// `recorded` when it is made, then sleeps on a futex word of the slot until
// `published` reaches it: a recorded-again event does not move a wait
// already made, as for a local event.
//
// A dead exporter must not hang its importers. A waiter woken by no
// publication within kLivenessPeriod looks at the exporter's descriptor of
// the page through /proc/<pid>/fd/<fd>, as opening the handle did: the
// kernel closes it when the process ends, whatever the way, and a later
// process with the same pid cannot have a memfd of the same name. If it is
// gone, the waiter gives up with acErrorMapBufferObjectFailed, after a last
// look at `published` (written before the descriptor can go). The exporter
// keeps the page, and so its descriptor, while any event on it lives, its
// pending record tasks included (they share ownership), so a live exporter
// always has a record outstanding or published. (A lock the
// kernel drops at exit would do too, but a child forked by the exporter
// would inherit and keep it.)
//
// Only the exporter records; an opened event waits. (CUDA lets an importer
// record too; nothing in PyTorch does, and numbering records from several
// processes would need a cross-process ordering of completions.)
//
// Note [IPC event pages]
// Every share of a tensor records an interprocess event, which the sender
// keeps until the receiver let go, so a process may hold thousands of them.
// A memfd per event would spend a descriptor per event, outside any budget,
// until the process cannot open a file. Instead a process exports its
// events from a few pages of kSlotsPerPage slots each, one descriptor per
// page, counted in the descriptor budget of shareable memory (Note [IPC]):
//   - Exporter. acEventCreateWithFlags takes the lowest free slot of its
//     first page that has one, or makes a new page when all are full; a
//     handle names the page (pid, descriptor, memfd name) and the slot. A
//     page lives while any of its events does, so that importers can tell
//     the exporter alive (above); an empty page is closed unless it is the
//     process's last, which stays for the next event (no churn of pages for
//     a process that shares one tensor at a time).
//   - Importer. Each exporter page is opened and mapped once per process
//     (a cache by pid, descriptor and name), however many of its events are
//     open here, and closed with the last of them; a page of this process
//     is used directly, without a descriptor.
//   - Reuse. Once an event is destroyed and its records have all run (its
//     IpcEvent dies: pending record tasks hold it), its slot is free for the
//     next event. A slot's numbers are never reset: a new event continues
//     from the old one's last record, which is published, so a wait still
//     pending for the old event stays satisfied. Each event has a serial
//     number stored in its slot (0: free): a handle carries it, so a handle
//     to a destroyed event is refused even when its slot has been reused,
//     and an importer whose event's slot has moved on knows that every
//     record of its event was published.
// With the budget spent and every slot taken, creating or opening an event
// fails with acErrorIpcDescriptorsExhausted, never with a descriptor taken
// from the process's files and sockets.
#include "ipc_event.h"

#include "event.h"
#include "memory.h"
#include "runtime.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace accinte {

// Events per page: the page, header included, is 64 KiB.
constexpr uint32_t kSlotsPerPage = 1023;

// LITERALINCLUDE START: IPC EVENT PAGE
// One event's words on a shared page: plain words, the same in every
// process. A cache line each, so that slots do not share one.
struct alignas(64) IpcEventSlot {
  std::atomic<uint64_t> serial;      // the event using the slot; 0: free
  std::atomic<uint64_t> recorded;    // latest record's number
  std::atomic<uint64_t> published;   // every record up to this one completed
  std::atomic<uint32_t> wakeups;     // futex word: bumped at each publication
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free,
              "the shared words must be plain lock-free words");

// A page: which memfd it is, then the slots. Zero when made: every slot is
// free and its numbers start at 0 (never recorded).
struct IpcEventPageLayout {
  struct alignas(64) Header {
    uint64_t magic;   // kPageMagic once initialized
    uint64_t nonce;   // the memfd's name, repeated
    uint64_t serial;
  } header;
  IpcEventSlot slots[kSlotsPerPage];
};
// LITERALINCLUDE END: IPC EVENT PAGE
static_assert(sizeof(IpcEventPageLayout) == 65536, "a page is 64 KiB");

namespace {

// What an acIpcEventHandle_t holds.
struct EventHandleData {
  uint32_t magic;       // kHandleMagic
  uint32_t version;     // kEventHandleVersion
  int32_t pid;          // exporting process
  int32_t fd;           // the page's memfd in that process
  int32_t device;       // device the event was created on
  uint32_t slot;        // the event's slot on the page
  uint64_t nonce;       // page memfd name: "accinte-event:<nonce>:<page serial>"
  uint64_t pageSerial;
  uint64_t serial;      // the event's serial: its slot's while it lives
};
static_assert(sizeof(EventHandleData) <= sizeof(acIpcEventHandle_t), "handle too small");

constexpr uint32_t kHandleMagic = 0x45494341;  // "ACIE"
constexpr uint32_t kEventHandleVersion = 2;
constexpr uint64_t kPageMagic = 0x4547415045494341;  // "ACIEPAGE"
constexpr size_t kPageBytes = sizeof(IpcEventPageLayout);
// How long a waiter sleeps between two looks at the exporter's liveness.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(20);

std::string pageName(uint64_t nonce, uint64_t serial) {
  return "accinte-event:" + std::to_string(nonce) + ":" + std::to_string(serial);
}

// True if descriptor `fd` of process `pid` (0: this one) is the page memfd
// named after `nonce` and `serial` (see hasName in ipc.cpp).
bool namesPage(pid_t pid, int fd, uint64_t nonce, uint64_t serial) {
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
  const std::string expected = "/memfd:" + pageName(nonce, serial) + " ";
  return std::strncmp(target, expected.c_str(), expected.size()) == 0;
}

IpcEventPageLayout* mapPage(int fd) {
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<IpcEventPageLayout*>(p);
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

// A page of event slots mapped in this process, with its descriptor, which
// counts against the descriptor budget: one of this process's own pages
// (kept by exportedPages() while it has events, and by its events) or one
// opened from another process (kept by the events opened from it). See
// Note [IPC event pages].
class IpcEventPage {
 public:
  // Takes over `fd` and `layout`, whose descriptor was taken from the budget.
  IpcEventPage(int fd, IpcEventPageLayout* layout, pid_t exporterPid, int exporterFd)
      : fd_(fd), layout_(layout), exporterPid_(exporterPid), exporterFd_(exporterFd) {}
  ~IpcEventPage() {
    munmap(layout_, kPageBytes);
    close(fd_);
    giveSharedDescriptor();
  }
  IpcEventPage(const IpcEventPage&) = delete;
  IpcEventPage& operator=(const IpcEventPage&) = delete;

  int fd() const { return fd_; }
  uint64_t nonce() const { return layout_->header.nonce; }
  uint64_t serial() const { return layout_->header.serial; }
  IpcEventSlot& slot(uint32_t index) const { return layout_->slots[index]; }
  // True while the exporting process still holds the page (always, for a
  // page of this process): Note [IPC events].
  bool exporterAlive() const {
    return exporterPid_ == 0 || namesPage(exporterPid_, exporterFd_, nonce(), serial());
  }

  // Exporter: the free slots, lowest last. Guarded by exportedPages().mutex.
  std::vector<uint32_t> freeSlots;

 private:
  const int fd_;
  IpcEventPageLayout* const layout_;
  const pid_t exporterPid_;  // 0: a page of this process
  const int exporterFd_;
};

namespace {

// This process's pages, in the order they were made: events fill the first
// ones, so that the last ones empty and go.
struct ExportedPages {
  std::mutex mutex;
  std::vector<std::shared_ptr<IpcEventPage>> pages;
};
ExportedPages& exportedPages() {
  static auto* pages = new ExportedPages();  // never destroyed: record tasks may run at exit
  return *pages;
}

// A new page of this process, all slots free.
acError_t makePage(std::shared_ptr<IpcEventPage>* out) {
  static std::atomic<uint64_t> serials{0};
  if (!takeSharedDescriptor()) {
    return acErrorIpcDescriptorsExhausted;
  }
  const uint64_t serial = serials.fetch_add(1) + 1;
  const int fd = memfd_create(pageName(processNonce(), serial).c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    giveSharedDescriptor();
    return error == EMFILE || error == ENFILE ? acErrorIpcDescriptorsExhausted
                                              : acErrorMemoryAllocation;
  }
  IpcEventPageLayout* layout = nullptr;
  if (ftruncate(fd, kPageBytes) != 0 || (layout = mapPage(fd)) == nullptr) {
    close(fd);
    giveSharedDescriptor();
    return acErrorMemoryAllocation;
  }
  layout->header.nonce = processNonce();
  layout->header.serial = serial;
  std::atomic_thread_fence(std::memory_order_release);
  layout->header.magic = kPageMagic;
  auto page = std::make_shared<IpcEventPage>(fd, layout, /*exporterPid=*/0, /*exporterFd=*/-1);
  page->freeSlots.reserve(kSlotsPerPage);
  for (uint32_t i = kSlotsPerPage; i > 0; --i) {
    page->freeSlots.push_back(i - 1);
  }
  *out = std::move(page);
  return acSuccess;
}

// LITERALINCLUDE START: IPC EVENT TAKE SLOT
// The lowest free slot of this process's pages, on a new page if all are
// taken.
acError_t takeSlot(std::shared_ptr<IpcEventPage>* page, uint32_t* slot) {
  auto& exported = exportedPages();
  std::lock_guard<std::mutex> lock(exported.mutex);
  for (const auto& p : exported.pages) {
    if (!p->freeSlots.empty()) {
      *page = p;
      *slot = p->freeSlots.back();
      p->freeSlots.pop_back();
      return acSuccess;
    }
  }
  std::shared_ptr<IpcEventPage> fresh;
  if (const acError_t e = makePage(&fresh); e != acSuccess) {
    return e;
  }
  exported.pages.push_back(fresh);
  *slot = fresh->freeSlots.back();
  fresh->freeSlots.pop_back();
  *page = std::move(fresh);
  return acSuccess;
}
// LITERALINCLUDE END: IPC EVENT TAKE SLOT

// Returns `slot` to `page`'s free slots. A page left with no event goes,
// unless it is the only one: its descriptor goes back to the budget once the
// caller's reference to it is gone.
void freeSlot(IpcEventPage& page, uint32_t slot) {
  auto& exported = exportedPages();
  std::lock_guard<std::mutex> lock(exported.mutex);
  auto& free = page.freeSlots;  // kept in decreasing order
  free.insert(std::lower_bound(free.begin(), free.end(), slot, std::greater<uint32_t>()), slot);
  if (free.size() == kSlotsPerPage && exported.pages.size() > 1) {
    exported.pages.erase(std::find_if(exported.pages.begin(), exported.pages.end(),
                                      [&](const auto& p) { return p.get() == &page; }));
  }
}

// This process's page of the handle, or null if it has none such.
std::shared_ptr<IpcEventPage> ownPage(const EventHandleData& h) {
  auto& exported = exportedPages();
  std::lock_guard<std::mutex> lock(exported.mutex);
  for (const auto& p : exported.pages) {
    if (p->serial() == h.pageSerial && p->fd() == h.fd) {
      return p;
    }
  }
  return nullptr;
}

// LITERALINCLUDE START: IPC EVENT OPEN PAGE
// Another process's page of the handle, mapped here once for all the events
// opened from it (Note [IPC event pages]).
acError_t openPage(const EventHandleData& h, std::shared_ptr<IpcEventPage>* out) {
  using Key = std::tuple<int32_t, int32_t, uint64_t, uint64_t>;  // pid, fd, name
  static auto* mutex = new std::mutex();
  static auto* opened = new std::map<Key, std::weak_ptr<IpcEventPage>>();
  const Key key{h.pid, h.fd, h.nonce, h.pageSerial};
  std::lock_guard<std::mutex> lock(*mutex);
  if (const auto it = opened->find(key); it != opened->end()) {
    if (auto page = it->second.lock()) {
      if (!page->exporterAlive()) {
        return acErrorMapBufferObjectFailed;  // its events are gone with it
      }
      *out = std::move(page);
      return acSuccess;
    }
  }
  if (!takeSharedDescriptor()) {
    return acErrorIpcDescriptorsExhausted;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", h.pid, h.fd);
  const int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    giveSharedDescriptor();
    return error == EMFILE || error == ENFILE ? acErrorIpcDescriptorsExhausted
                                              : acErrorMapBufferObjectFailed;
  }
  IpcEventPageLayout* layout = namesPage(0, fd, h.nonce, h.pageSerial) ? mapPage(fd) : nullptr;
  if (layout == nullptr || layout->header.magic != kPageMagic ||
      layout->header.nonce != h.nonce || layout->header.serial != h.pageSerial) {
    if (layout != nullptr) {
      munmap(layout, kPageBytes);
    }
    close(fd);
    giveSharedDescriptor();
    return acErrorMapBufferObjectFailed;  // the descriptor now names something else
  }
  auto page = std::make_shared<IpcEventPage>(fd, layout, h.pid, h.fd);
  for (auto it = opened->begin(); it != opened->end();) {  // forget closed pages
    it = it->second.expired() ? opened->erase(it) : std::next(it);
  }
  (*opened)[key] = page;
  *out = std::move(page);
  return acSuccess;
}
// LITERALINCLUDE END: IPC EVENT OPEN PAGE

}  // namespace

IpcEvent::IpcEvent(int device, bool imported, std::shared_ptr<IpcEventPage> page, uint32_t slot,
                   uint64_t serial)
    : device_(device), imported_(imported), page_(std::move(page)), slotIndex_(slot),
      serial_(serial) {}

IpcEventSlot& IpcEvent::slot() const {
  return page_->slot(slotIndex_);
}

acError_t IpcEvent::create(int device, std::shared_ptr<IpcEvent>* out) {
  static std::atomic<uint64_t> serials{0};
  std::shared_ptr<IpcEventPage> page;
  uint32_t index = 0;
  if (const acError_t e = takeSlot(&page, &index); e != acSuccess) {
    return e;
  }
  const uint64_t serial = serials.fetch_add(1) + 1;
  IpcEventSlot& s = page->slot(index);
  try {
    out->reset(new IpcEvent(device, /*imported=*/false, page, index, serial));
  } catch (...) {
    freeSlot(*page, index);
    throw;
  }
  // The numbers go on from the slot's previous event, all published.
  (*out)->published_ = s.published.load();
  s.serial.store(serial);  // before any record: see IpcEvent::latest
  return acSuccess;
}

acError_t IpcEvent::open(const acIpcEventHandle_t& handle, std::shared_ptr<IpcEvent>* out) {
  EventHandleData h{};
  std::memcpy(&h, handle.reserved, sizeof(h));
  if (h.magic != kHandleMagic || h.version != kEventHandleVersion || h.pid <= 0 || h.fd < 0 ||
      h.slot >= kSlotsPerPage || h.serial == 0) {
    return acErrorMapBufferObjectFailed;
  }
  if (!isValidDevice(h.device)) {
    return acErrorInvalidDevice;
  }
  std::shared_ptr<IpcEventPage> page;
  if (h.pid == getpid() && h.nonce == processNonce()) {
    page = ownPage(h);
    if (page == nullptr) {
      return acErrorMapBufferObjectFailed;
    }
  } else if (const acError_t e = openPage(h, &page); e != acSuccess) {
    return e;
  }
  if (page->slot(h.slot).serial.load() != h.serial) {
    return acErrorMapBufferObjectFailed;  // the event was destroyed
  }
  out->reset(new IpcEvent(h.device, /*imported=*/true, std::move(page), h.slot, h.serial));
  return acSuccess;
}

IpcEvent::~IpcEvent() {
  if (imported_) {
    return;  // the page goes with its last event here
  }
  // Every record task has run, each publishing its record (or acEventRecord
  // did), so this publishes nothing, unless a task was dropped unrun: its
  // record then counts as complete, so that no number of this slot stays
  // unpublished for the next event.
  const uint64_t recorded = slot().recorded.load();
  if (slot().published.load() < recorded) {
    slot().published.store(recorded);
    slot().wakeups.fetch_add(1);
    futexWakeAll(&slot().wakeups);
  }
  slot().serial.store(0);  // handles to this event no longer open
  freeSlot(*page_, slotIndex_);
}

void IpcEvent::exportHandle(acIpcEventHandle_t* handle) const {
  EventHandleData h{};
  h.magic = kHandleMagic;
  h.version = kEventHandleVersion;
  h.pid = static_cast<int32_t>(getpid());
  h.fd = page_->fd();
  h.device = device_;
  h.slot = slotIndex_;
  h.nonce = page_->nonce();
  h.pageSerial = page_->serial();
  h.serial = serial_;
  std::memset(handle->reserved, 0, sizeof(handle->reserved));
  std::memcpy(handle->reserved, &h, sizeof(h));
}

// LITERALINCLUDE START: IPC EVENT PUBLISH
uint64_t IpcEvent::beginRecord() {
  std::lock_guard<std::mutex> lock(mutex_);
  return slot().recorded.fetch_add(1) + 1;
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
    slot().published.store(published_);
    slot().wakeups.fetch_add(1);
  }
  futexWakeAll(&slot().wakeups);
}
// LITERALINCLUDE END: IPC EVENT PUBLISH

uint64_t IpcEvent::latest() const {
  const uint64_t recorded = slot().recorded.load();
  // Read after `recorded`: if the slot still holds this event, `recorded` was
  // this event's (a next event stores its serial before its first record).
  // If not, every record of this event was published before the slot was
  // freed: nothing to wait for.
  if (imported_ && slot().serial.load() != serial_) {
    return 0;
  }
  return recorded;
}

acError_t IpcEvent::query(uint64_t generation) const {
  if (slot().published.load() >= generation) {
    return acSuccess;
  }
  if (!imported_ || page_->exporterAlive()) {
    return acErrorNotReady;
  }
  // Published before the descriptor could go: a last look decides.
  return slot().published.load() >= generation ? acSuccess : acErrorMapBufferObjectFailed;
}

// LITERALINCLUDE START: IPC EVENT WAIT
acError_t IpcEvent::wait(uint64_t generation) const {
  for (;;) {
    const uint32_t seen = slot().wakeups.load();
    if (slot().published.load() >= generation) {
      return acSuccess;
    }
    // Sleeps until a publication (or kLivenessPeriod), then looks again.
    futexWait(&slot().wakeups, seen, kLivenessPeriod);
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
