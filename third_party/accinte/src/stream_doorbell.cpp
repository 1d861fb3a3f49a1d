// stream_doorbell.cpp: how an idle stream worker learns of new work (Note
// [accinte worker doorbell]); the rest of the worker is in stream.cpp.
#include "stream.h"

#include <algorithm>
#include <thread>

namespace accinte {

// LITERALINCLUDE START: RUNTIME WORKER DOORBELL
// Note [accinte worker doorbell]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU learns of new work from a doorbell: the driver writes one register,
// the device reads nothing else until it rings. The idle worker does the
// same. While it waits it reads doorbell_ alone, on a cache line of its own
// that a launch writes once; every other line a host thread writes per
// operation (the lock, pending_, issued_, started_, finished_, executing_)
// stays in the host core's cache. A spinning reader of those lines takes
// each from the writer again after every write, and a write to a line
// another core holds waits for that core: when the host runs the work itself
// (Note [accinte a waiting host runs the queue]) it writes them half a dozen
// times per .item() round trip. Rung under the stream's lock by a launch
// into an empty queue, by a waiting host that leaves queued work behind, and
// at destruction; so any work pending and not taken was rung for after the
// worker last read the doorbell, or the worker sees it under the lock. Once
// rung, the worker sleeps out the launch latency without reading anything
// shared, then takes the lock only if nobody has started the rung work:
// when the waiting host has run it, the worker goes back to its doorbell
// without touching the host's lines. It waits for the doorbell in sleeps of
// half the latency rather than spinning (with no latency it spins, yielding),
// so it leaves the processor to the host's threads: during a loop of
// x.add_(1).item(), where the host runs every kernel, the worker uses about
// half a core where spinning took all of one.
void Stream::ringDoorbell() {
  rungTicket_.store(pending_.empty() ? issued_.load() + 1 : pending_.front().first,
                    std::memory_order_relaxed);
  doorbell_.fetch_add(1);  // after the stores it publishes
}

std::chrono::steady_clock::time_point Stream::pendingSince() const {
  return std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(pendingSince_.load(std::memory_order_relaxed)));
}

bool Stream::awaitDoorbell(uint64_t rung, std::chrono::microseconds latency) {
  using Clock = std::chrono::steady_clock;
  const auto rang = [&] { return doorbell_.load() != rung; };
  // Between looks at the doorbell the worker sleeps half the launch latency,
  // so it takes rung work at most one and a half latencies after the launch.
  const auto step = std::max(latency / 2, std::chrono::microseconds(1));
  std::unique_lock<std::mutex> doze(dozeMutex_);
  for (;;) {
    const auto deadline = Clock::now() + std::chrono::microseconds(config().spinMicroseconds);
    while (!rang()) {
      if (Clock::now() >= deadline) {
        return false;  // quiet for the spin time: sleep until a launch wakes it
      }
      if (latency.count() == 0) {
        doze.unlock();
        std::this_thread::yield();  // no latency: take work as soon as it rings
        doze.lock();
      } else {
        dozeCv_.wait_for(doze, step);  // the destructor notifies
      }
    }
    rung = doorbell_.load();
    // The first task queued since that ring (or a later one: then the test
    // below is only more eager).
    const uint64_t first = rungTicket_.load(std::memory_order_relaxed);
    // Note [accinte launch latency]
    dozeCv_.wait_until(doze, pendingSince() + latency, [&] { return stopping_.load(); });
    if (started_.load() < first || stopping_.load()) {
      return true;  // nobody has taken it, or the end: the worker's to see
    }
  }
}
// LITERALINCLUDE END: RUNTIME WORKER DOORBELL

}  // namespace accinte
