#include <csrc/distributed/ShmSegment.h>

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <thread>

namespace c10d::accinte {

namespace {

constexpr uint64_t kMagic = 0x4d48534c43434141;  // "AACCLSHM"
constexpr size_t kLine = 64;                     // one cache line per rank's counters
constexpr size_t kPage = 4096;
// A spin before sleeping, as libaccinte's streams do: see Note [accinte spin
// before sleeping] in third_party/accinte/src/stream.cpp.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kNap = std::chrono::milliseconds(10);   // a sleep between liveness checks

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// Is `a` at or past `b`, counting modulo 2^32.
bool reached(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) >= 0;
}

// A futex on a word of a MAP_SHARED page: not FUTEX_PRIVATE, so processes meet on it.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds t) {
  timespec ts{static_cast<time_t>(t.count() / 1000000000),
              static_cast<long>(t.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The liveness lock of rank `r`: one byte of the memfd, held through this
// process's open file description; the kernel drops it when the process ends.
struct flock liveness_lock(int r, short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = r;
  lock.l_len = 1;
  return lock;
}

} // namespace

struct ShmSegment::RankState {
  std::atomic<uint32_t> phase;     // phases ended; futex word
  std::atomic<uint32_t> sleepers;  // peers sleeping on `phase`
  std::atomic<uint32_t> joined;    // 1 once the rank holds its liveness lock
  std::atomic<uint32_t> left;      // 1 once its segment was destroyed
};
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
              "the shared counters must be plain lock-free words");

struct ShmSegment::Header {
  uint64_t magic;
  uint64_t nonce;
  uint64_t size;
  uint64_t slot_bytes;
};

ShmSegment::ShmSegment(int fd, int rank, int size, size_t slot_bytes, uint64_t nonce,
                       std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), slot_bytes_(round_up(slot_bytes, kLine)), timeout_(timeout) {
  TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "accl shm: bad rank ", rank, " of ", size);
  TORCH_CHECK(slot_bytes >= 64, "accl shm: the slot size must be at least 64 bytes, got ",
              slot_bytes);
  // round_up wraps to 0 near SIZE_MAX, and the segment size overflows long before that.
  TORCH_CHECK(slot_bytes_ >= slot_bytes && slot_bytes_ <= (size_t{1} << 40) / (2 * size),
              "accl shm: the slot size ", slot_bytes, " is too large for ", size, " ranks");
  data_offset_ = round_up(kLine * (1 + size), kPage);
  bytes_ = data_offset_ + 2 * static_cast<size_t>(size) * slot_bytes_;
  fd_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  TORCH_CHECK(fd_ >= 0, "accl shm: dup of descriptor ", fd, " failed: ", std::strerror(errno));
  try {
    if (rank == 0) {
      TORCH_CHECK(ftruncate(fd_, static_cast<off_t>(bytes_)) == 0,
                  "accl shm: cannot size the segment to ", bytes_, " bytes: ",
                  std::strerror(errno));
    }
    struct stat st {};
    TORCH_CHECK(fstat(fd_, &st) == 0 && static_cast<size_t>(st.st_size) == bytes_,
                "accl shm: the segment has ", st.st_size, " bytes, expected ", bytes_,
                " (not the segment rank 0 made)");
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    TORCH_CHECK(p != MAP_FAILED, "accl shm: mmap of ", bytes_, " bytes failed: ",
                std::strerror(errno));
    base_ = static_cast<std::byte*>(p);
    auto* header = reinterpret_cast<Header*>(base_);
    if (rank == 0) {
      for (int r = 0; r < size; ++r) {
        new (&state(r)) RankState{}; // the page is zeroed; this starts the atomics' lives
      }
      *header = Header{kMagic, nonce, static_cast<uint64_t>(size), slot_bytes_};
    }
    TORCH_CHECK(header->magic == kMagic && header->nonce == nonce &&
                    header->size == static_cast<uint64_t>(size) &&
                    header->slot_bytes == slot_bytes_,
                "accl shm: the segment's header does not match this group (not the segment "
                "rank 0 made)");
    struct flock lock = liveness_lock(rank, F_WRLCK);
    TORCH_CHECK(fcntl(fd_, F_OFD_SETLK, &lock) == 0, "accl shm: cannot take the liveness lock "
                "of rank ", rank, ": ", std::strerror(errno));
    state(rank).joined.store(1);
  } catch (...) {
    if (base_ != nullptr) {
      munmap(base_, bytes_);
    }
    close(fd_);
    throw;
  }
}

ShmSegment::~ShmSegment() {
  RankState& me = state(rank_);
  me.left.store(1);
  futex_wake_all(&me.phase); // a sleeping peer wakes and finds this rank gone
  munmap(base_, bytes_);
  close(fd_); // drops the liveness lock
}

void ShmSegment::abort() {
  aborted_.store(true);
  RankState& me = state(rank_);
  me.left.store(1);
  futex_wake_all(&me.phase); // peers sleeping on this rank find it gone
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) {
      futex_wake_all(&state(peer).phase); // and this rank's own sleeper wakes
    }
  }
}

ShmSegment::RankState& ShmSegment::state(int r) const {
  return *reinterpret_cast<RankState*>(base_ + kLine * (1 + r));
}

std::byte* ShmSegment::slot(int buffer, int r) const {
  return base_ + data_offset_ + (static_cast<size_t>(buffer) * size_ + r) * slot_bytes_;
}

// LITERALINCLUDE START: ACCL SHM SYNC
void ShmSegment::sync(const char* what) {
  ++phase_;
  RankState& me = state(rank_);
  me.phase.store(phase_); // release: our slot's writes before it (seq_cst)
  if (me.sleepers.load() != 0) {
    futex_wake_all(&me.phase);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) {
      wait_for(peer, what, deadline);
    }
  }
}
// LITERALINCLUDE END: ACCL SHM SYNC

void ShmSegment::wait_for(int peer, const char* what,
                          std::chrono::steady_clock::time_point deadline) const {
  RankState& other = state(peer);
  auto arrived = [&] { return reached(other.phase.load(), phase_); };
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  while (!arrived()) {
    const auto now = std::chrono::steady_clock::now();
    if (now < spin_until) {
      std::this_thread::yield(); // the peer may need this very core
      continue;
    }
    TORCH_CHECK(!aborted_.load(), "accl shm: ", what, ": the process group was aborted "
                "while this rank waited for rank ", peer);
    const std::string gone = why_gone(peer);
    // A peer publishes its phase before it leaves or ends: read it again.
    if (!gone.empty() && arrived()) {
      return;
    }
    TORCH_CHECK(gone.empty(), "accl shm: ", what, ": rank ", peer, " ", gone);
    TORCH_CHECK(now < deadline, "accl shm: ", what, " timed out after ", timeout_.count(),
                " ms waiting for rank ", peer, " (the group's timeout): the peer did not join "
                "the collective");
    const uint32_t seen = other.phase.load();
    if (reached(seen, phase_)) {
      return;
    }
    other.sleepers.fetch_add(1);
    futex_wait(&other.phase, seen, std::min<std::chrono::nanoseconds>(kNap, deadline - now));
    other.sleepers.fetch_sub(1);
  }
}

std::string ShmSegment::why_gone(int peer) const {
  RankState& other = state(peer);
  if (other.left.load() != 0) {
    return "left the group (its process group was destroyed or aborted)";
  }
  if (other.joined.load() == 0) {
    return ""; // not there yet: only the timeout applies
  }
  struct flock lock = liveness_lock(peer, F_WRLCK);
  TORCH_CHECK(fcntl(fd_, F_OFD_GETLK, &lock) == 0, "accl shm: cannot query rank ", peer,
              "'s liveness lock: ", std::strerror(errno));
  return lock.l_type == F_UNLCK ? "died (its process ended) during the collective" : "";
}

} // namespace c10d::accinte
