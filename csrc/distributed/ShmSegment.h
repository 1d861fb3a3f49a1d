#pragma once
// ShmSegment: the memory the ranks of one group on one host share, and the
// counters they meet at (Note [accl shm transport]).
//
// Note [accl shm transport]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// NCCL moves the bytes of ranks on one node through memory they all map
// (its SHM and P2P transports) rather than through the network. ShmEngine
// (ShmEngine.h) does the same over one segment per group: a memfd made by
// rank 0 and opened by the others through /proc/<pid>/fd/<fd> (the way
// libaccinte shares device memory, third_party/accinte/src/ipc.cpp), found
// through the group's c10d store (torch_accinte/distributed.py). It holds
//   - a header: magic, a nonce from the store (so a descriptor number reused
//     for another file is refused), the world size and the slot size;
//   - per rank, on its own cache line: `phase`, a counter of the phases the
//     rank has ended, `sleepers`, how many peers sleep on it, and whether
//     the rank has joined and left the segment;
//   - two buffers of one slot per rank. Consecutive chunks of a collective
//     alternate buffers, so a rank may fill its slot for the next chunk while
//     its peers still read the current one.
// A rank writes only its own slot (and its own counters). A phase ends with
// sync(): the rank publishes its counter (release) and waits until every
// peer's counter has reached it (acquire), so each sees what the others
// wrote before. One sync at least per chunk, and a rank reuses a buffer two
// chunks later: by then every peer has ended a phase after its last read of
// it. Sync spins briefly, then sleeps on the peer's counter (a futex on the
// shared page, woken by the peer when it publishes).
//
// Nothing waits unbounded. A wait fails with a clear error when this rank's
// group was aborted (abort(): ProcessGroup abort, or Work.wait(timeout)
// giving up), when a peer has left the segment (its engine was destroyed by
// destroy_process_group, or aborted), when it died (each rank holds an
// open-file-description lock on one byte of the memfd, which the kernel drops
// when the process ends), or when the group's timeout passed without the peer
// reaching the phase.


#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace c10d::accinte {

class ShmSegment {
 public:
  /// Maps the memfd `fd` (this process's descriptor of it; the segment keeps
  /// a duplicate, the caller may close `fd`). Rank 0 sizes it and writes the
  /// header; the other ranks check that header (`nonce`, `size`,
  /// `slot_bytes`) and throw if it is not the segment rank 0 made. Every rank
  /// then takes its liveness lock and marks itself joined.
  ShmSegment(int fd, int rank, int size, size_t slot_bytes, uint64_t nonce,
             std::chrono::milliseconds timeout);
  /// Marks this rank as gone (its peers' waits fail at once), wakes them, unmaps.
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Bytes of one slot (a multiple of 64).
  size_t slot_bytes() const { return slot_bytes_; }

  /// The buffer the next chunk uses (alternates, the same on every rank).
  int next_buffer() { return static_cast<int>(chunks_++ & 1); }
  /// Rank `r`'s slot in `buffer`.
  std::byte* slot(int buffer, int r) const;

  /// Ends a phase: publishes this rank's writes to its slot and waits until
  /// every rank has ended the phase, so their writes are visible here.
  /// Throws (naming `what`) if a peer left, died, or did not arrive within the
  /// timeout; the segment is then unusable (its group breaks).
  void sync(const char* what);

  /// Makes every wait of sync, current or later, on any thread, throw within
  /// a nap (10 ms), and marks this rank as gone so its peers' waits throw too.
  /// Thread-safe; the segment stays mapped until it is destroyed.
  void abort();

 private:
  struct RankState;
  struct Header;
  RankState& state(int r) const;
  /// Waits until rank `peer` has ended phase `phase_`, or throws.
  void wait_for(int peer, const char* what,
                std::chrono::steady_clock::time_point deadline) const;
  /// Why rank `peer` will never reach a phase (it left the segment or died),
  /// or "" if it still may.
  std::string why_gone(int peer) const;

  int fd_ = -1;
  int rank_;
  int size_;
  size_t slot_bytes_;
  std::chrono::milliseconds timeout_;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  size_t data_offset_ = 0;
  uint32_t phase_ = 0;   // phases this rank has ended
  uint64_t chunks_ = 0;  // chunks this rank has started
  std::atomic<bool> aborted_{false};
};

} // namespace c10d::accinte
