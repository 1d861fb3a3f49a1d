#include <csrc/runtime/AccInteIPCCounters.h>

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace c10::accinte {
namespace {

constexpr uint32_t kSlotsPerFile = 1u << 16; // 512 KiB of mostly untouched pages
constexpr size_t kFileBytes = size_t{kSlotsPerFile} * sizeof(int64_t);
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "counters shared between processes must be lock-free");

std::string file_name(uint64_t nonce) {
  return "accinte-ipc-counters:" + std::to_string(nonce);
}

std::atomic<int64_t>* map_counters(int fd) {
  void* p = mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  TORCH_CHECK(p != MAP_FAILED, "accinte: cannot map IPC reference counts: ", std::strerror(errno));
  return static_cast<std::atomic<int64_t>*>(p);
}

// This process's counter files and their free slots. Never destroyed: a
// storage may release its counter from a static destructor at exit.
class SentCounters {
 public:
  IpcCounterHandle acquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) {
      grow();
    }
    IpcCounterHandle handle = free_.back();
    free_.pop_back();
    slot_locked(handle).store(1);
    return handle;
  }

  // The counter itself lives in a mapping that never moves, so the reference
  // stays valid after the lock is released; only files_ needs the lock, since
  // acquire() may grow it on another thread.
  std::atomic<int64_t>& slot(const IpcCounterHandle& handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    return slot_locked(handle);
  }

  void release(const IpcCounterHandle& handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(slot_locked(handle).load() == 0, "accinte: freeing an IPC counter still in use");
    free_.push_back(handle);
  }

 private:
  struct File {
    int fd;
    uint64_t nonce;
    std::atomic<int64_t>* counters;
  };

  // Requires mutex_.
  std::atomic<int64_t>& slot_locked(const IpcCounterHandle& handle) {
    for (const File& file : files_) {
      if (file.fd == handle.fd && file.nonce == handle.nonce && handle.pid == getpid()) {
        TORCH_CHECK(handle.slot < kSlotsPerFile, "accinte: bad IPC counter slot ", handle.slot);
        return file.counters[handle.slot];
      }
    }
    TORCH_CHECK(false, "accinte: the IPC counter was not made by this process");
  }

  // Requires mutex_.
  void grow() {
    std::random_device source;
    const uint64_t nonce = (static_cast<uint64_t>(source()) << 32) ^ source();
    const int fd = memfd_create(file_name(nonce).c_str(), MFD_CLOEXEC);
    TORCH_CHECK(fd >= 0, "accinte: cannot create IPC reference counts: ", std::strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(kFileBytes)) != 0) {
      const int error = errno;
      close(fd);
      TORCH_CHECK(false, "accinte: cannot size IPC reference counts: ", std::strerror(error));
    }
    std::atomic<int64_t>* counters = nullptr;
    try {
      counters = map_counters(fd);
    } catch (...) {
      close(fd);
      throw;
    }
    files_.push_back({fd, nonce, counters});
    for (uint32_t i = kSlotsPerFile; i-- > 0;) {
      free_.push_back({static_cast<int32_t>(getpid()), fd, nonce, i, 0});
    }
  }

  std::mutex mutex_;                   // guards files_ and free_
  std::vector<File> files_;            // the fd stays open: receivers open it by /proc path
  std::vector<IpcCounterHandle> free_; // lowest slots last, so used first
};

SentCounters& sent() {
  static auto* counters = new SentCounters();
  return *counters;
}

// True if descriptor `fd` of this process is the memfd named for `nonce`.
bool has_name(int fd, uint64_t nonce) {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[256];
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n <= 0) {
    return false;
  }
  target[n] = '\0';
  const std::string expected = "/memfd:" + file_name(nonce) + " "; // "... (deleted)"
  return std::strncmp(target, expected.c_str(), expected.size()) == 0;
}

} // namespace

IpcCounterHandle new_sent_counter() {
  return sent().acquire();
}

int64_t sent_counter_value(const IpcCounterHandle& handle) {
  return sent().slot(handle).load();
}

void free_sent_counter(const IpcCounterHandle& handle) {
  sent().release(handle);
}

void release_reference(std::atomic<int64_t>& counter) {
  int64_t value = counter.load();
  while (value > 0 && !counter.compare_exchange_weak(value, value - 1)) {
  }
}

std::atomic<int64_t>* received_counter(const IpcCounterHandle& handle) {
  TORCH_CHECK(handle.slot < kSlotsPerFile, "accinte: bad IPC counter slot ", handle.slot);
  if (handle.pid == getpid()) {
    return &sent().slot(handle); // a storage shared with this very process
  }
  // Mappings of other processes' counter files; kept for the process's life
  // (half a MiB of address space each, almost none of it resident).
  static std::mutex mutex;
  static auto* mapped =
      new std::map<std::tuple<int32_t, int32_t, uint64_t>, std::atomic<int64_t>*>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& counters = (*mapped)[{handle.pid, handle.fd, handle.nonce}];
  if (counters == nullptr) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", handle.pid, handle.fd);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 || !has_name(fd, handle.nonce)) {
      if (fd >= 0) {
        close(fd);
      }
      mapped->erase({handle.pid, handle.fd, handle.nonce});
      TORCH_CHECK(false, "accinte: cannot open the IPC reference counts of process ", handle.pid,
                  " (has it exited?)");
    }
    try {
      counters = map_counters(fd);
    } catch (...) {
      close(fd);
      mapped->erase({handle.pid, handle.fd, handle.nonce});
      throw;
    }
    close(fd); // the mapping keeps the file
  }
  return counters + handle.slot;
}

} // namespace c10::accinte
