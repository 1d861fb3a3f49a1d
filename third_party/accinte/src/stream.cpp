// stream.cpp: the Stream worker (one thread per stream running its queue in
// order) and Completion, the signal an event record waits on.
#include "stream.h"

#include "activity.h"
#include "graph.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <thread>
#include <utility>

namespace accinte {
namespace {

// The stream whose work the calling thread runs, if any: its worker's
// stream, or one a host thread runs work of (StreamWorkScope).
thread_local const Stream* tWorkerStream = nullptr;

// Runs one task. Whatever it throws becomes a launch failure: a task may be
// foreign code (a kernel or host function) and must never take the process
// down with an exception escaping a thread.
acError_t runTask(const Stream::Task& task) noexcept {
  try {
    return task();
  } catch (...) {
    return acErrorLaunchFailure;
  }
}

// Note [accinte spin before sleeping]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A host thread waiting for a stream (a synchronisation, .item()) and a
// worker waiting for its next task both wait for a short while before they
// sleep on their condition variable (the worker dozes on its doorbell
// instead of spinning when it has a launch latency: Note [accinte worker
// doorbell]), as CUDA's default schedule
// (cudaDeviceScheduleAuto) spins before it blocks. Waking a sleeping thread
// costs a futex call on each side and a trip through the scheduler: tens of
// microseconds on a busy machine, more than a small kernel runs. While the
// worker spins, a launch finds nobody to wake; while the host spins, the
// worker's notification finds nobody to wake either. The spin reads an
// atomic counter, yields the processor between reads (on a machine with
// fewer cores than runnable threads, the thread it waits for may need that
// very core) and gives up after ACCINTE_SPIN_US microseconds, so an idle
// stream costs nothing once its worker sleeps. The default is 50 on every
// machine: on an idle 2-core machine the .item() round trip took 97 us
// without the spin and 7 us with it (benchmarks/README.md has the series,
// and why the spin yields from its first read). Unlike
// cudaDeviceScheduleAuto, which spins only with cores to spare, accinte
// spins on two cores too: its worker is a thread of the same process.
// LITERALINCLUDE START: RUNTIME SPIN BEFORE SLEEPING
// Spins until `ready()` or config().spinMicroseconds have passed; returns ready().
template <class Ready>
bool spinUntil(Ready&& ready) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(config().spinMicroseconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}
// LITERALINCLUDE END: RUNTIME SPIN BEFORE SLEEPING

// Note [accinte launch latency]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU starts a kernel launched on an idle stream some microseconds after
// the launch call returns. An accinte stream does the same: its worker
// takes work that reached an idle stream no sooner than
// ACCINTE_LAUNCH_LATENCY_US (default 20) after the launch that queued it,
// yielding the processor meanwhile. In that window a host thread that comes
// to wait for the stream (an .item() right after the operator that computed
// the value) finds the work untaken and runs it itself (Note [accinte a
// waiting host runs the queue]). The host reaches the wait a few
// microseconds after the enqueue: the launch finishes, Python returns, and
// .item() dispatches. The default of 20 us took the .item() round trip from
// 2.6x the CPU's (no latency) to 2.2x (the series: benchmarks/README.md). The cost is the
// latency itself, seen only by a program that polls an idle stream's work
// (queries, another stream waiting on an event). A busy stream has none:
// the worker takes the next batch as soon as it has run the last. 0 takes
// work at once.

// Yields the processor until `due`, or until `taken()`: a host thread that
// came to wait has run the work meanwhile, so a long latency (tests set up to
// a second) does not keep the worker yielding with nothing to take.
template <typename Taken>
void yieldUntil(std::chrono::steady_clock::time_point due, Taken taken) {
  while (std::chrono::steady_clock::now() < due && !taken()) {
    std::this_thread::yield();
  }
}

// Takes the stream's lock, trying it a few times before sleeping on it: the
// lock is held for a push or a swap only, far shorter than the futex sleep
// and wake that a contended std::mutex costs both threads.
void lockBriefly(std::unique_lock<std::mutex>& lock) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (lock.try_lock()) {
      return;
    }
    std::this_thread::yield();
  }
  lock.lock();
}

}  // namespace

bool onWorkerThread() {
  return tWorkerStream != nullptr;
}

bool workerStreamOf(acStream_t* stream, int* device) {
  if (tWorkerStream == nullptr) {
    return false;
  }
  *stream = reinterpret_cast<acStream_t>(const_cast<Stream*>(tWorkerStream));
  *device = tWorkerStream->device();
  return true;
}

StreamWorkScope::StreamWorkScope(const Stream* stream)
    : previous_(std::exchange(tWorkerStream, stream)) {}

StreamWorkScope::~StreamWorkScope() {
  tWorkerStream = previous_;
}

// ---- Completion -------------------------------------------------------------

void Completion::complete() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    time_ = std::chrono::steady_clock::now();
    done_ = true;
  }
  doneCv_.notify_all();
}

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void Completion::wait() const {
  std::unique_lock<std::mutex> lock(mutex_);
  doneCv_.wait(lock, [&] { return done_; });
}

std::chrono::steady_clock::time_point Completion::time() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return time_;
}

// ---- Stream -----------------------------------------------------------------

Stream::Stream(int device, int priority, bool isDefault)
    : device_(device), priority_(priority), isDefault_(isDefault) {
  markInitialized();
}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    ringDoorbell();
  }
  workCv_.notify_all();
  {
    // A worker dozing on its doorbell checks stopping_ under dozeMutex_
    // before it waits: after this lock it either saw it or waits and is woken.
    std::lock_guard<std::mutex> doze(dozeMutex_);
  }
  dozeCv_.notify_all();
  if (worker_.joinable()) {
    worker_.join();
  }
}

std::shared_ptr<Capture> Completion::activeCapture() const {
  auto capture = capture_.lock();
  return capture != nullptr && capture->active() ? capture : nullptr;
}

std::shared_ptr<Capture> Stream::capture() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capture_;
}

bool Stream::beginCapture(std::shared_ptr<Capture> capture) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capture_ != nullptr) {
    return false;
  }
  capture_ = std::move(capture);
  return true;
}

void Stream::clearCapture() {
  std::lock_guard<std::mutex> lock(mutex_);
  capture_ = nullptr;
}

// Note [accinte stream queue]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A launch and the worker meet at the stream's lock, and every time they
// meet there a cache line moves between two cores; when one finds the lock
// taken, std::mutex puts it to sleep in the kernel, which costs more than a
// small kernel runs. So the worker takes the lock once per *batch*: it swaps
// the vector of pending tasks for its own empty one and runs the batch
// without the lock, publishing progress through atomics (started_: room in
// the queue; finished_: what synchronisations wait for). It takes the lock
// again only to record an error or to wake a host thread that sleeps, and a
// launch notifies the worker's condition variable only when the worker
// sleeps on it (workerSleeping_). A thread about to sleep counts itself in
// doneWaiters_/roomWaiters_ under the lock before it checks its condition,
// and the worker checks the count after it publishes, both sequentially
// consistent, so one of the two always sees the other: no wake-up is lost.
// An empty kernel's launch and synchronisation, from C, takes 0.82 us on an
// idle 2-core machine; notifying on every launch cost thousands of futex
// sleeps a second.

// Note [accinte launch queue depth]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A CUDA launch returns at once until the device's queue is full, then
// blocks until a slot frees up; a program that never synchronizes so runs
// at most a bounded distance ahead of the device. Each accinte stream does
// the same: once ACCINTE_LAUNCH_QUEUE_DEPTH tasks (default 1024) wait in its
// queue, a kernel launch, host function, asynchronous copy or memset, or
// graph launch blocks the launching thread until the worker takes the next
// task. Without the bound, a loop of small operations queues millions of
// kernels (each holding its arguments) and grows the process by gigabytes.
// Three kinds of enqueue never wait, because a wait there could deadlock:
//   - event records and event waits, which the caching allocators queue
//     while holding their own lock, a lock a finishing task may need when it
//     releases the memory it captured;
//   - anything queued from a worker thread (a host function launching more
//     work): the worker would wait for a queue that only workers drain;
//   - work handed to a capture, which is not queued at all.
// The wait holds no lock of the runtime but the stream's own (released while
// waiting). The runtime knows nothing of Python: a queued task may need the
// GIL (a CPU kernel written in Python), so the backend releases the GIL
// around its launches (HostWaitGuard in csrc/runtime/AccInteKernel.cpp).
// LITERALINCLUDE START: GRAPH STREAM ENQUEUE
acError_t Stream::enqueue(Task task, const char* kind, WhenFull whenFull) {
  bool started = false;
  bool wake = false;
  {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lockBriefly(lock);
    if (whenFull == WhenFull::kWait && !onWorkerThread()) {
      const uint64_t depth = config().launchQueueDepth;
      const auto room = [&] { return capture_ != nullptr || issued_ - started_ < depth; };
      if (!room()) {
        ++roomWaiters_;
        roomCv_.wait(lock, room);
        --roomWaiters_;
      }
    }
    if (capture_ != nullptr) {
      auto capture = capture_;
      lock.unlock();
      return capture->record(this, kind, std::move(task));
    }
    if (!worker_.joinable()) {
      // Started lazily: most pool streams are never used. May throw
      // std::system_error, before anything was queued.
      worker_ = std::thread([this] { runWorker(); });
      started = true;
    }
    if (pending_.empty()) {
      if (config().launchLatencyMicroseconds > 0) {  // Note [accinte launch latency]
        pendingSince_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_relaxed);
      }
      ringDoorbell();
    }
    pending_.emplace_back(issued_ + 1, std::move(task));
    ++issued_;
    wake = workerSleeping_;
  }
  if (wake) {
    workCv_.notify_one();
  }
  if (started) {
    // Outside the stream's lock: the registry's lock is never taken under it.
    noteWorkerStarted(shared_from_this());
  }
  return acSuccess;
}
// LITERALINCLUDE END: GRAPH STREAM ENQUEUE

std::shared_ptr<Completion> Stream::record() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (capture_ != nullptr) {
    // A point in the graph: complete as far as live work is concerned, and
    // refused by queries and waits that are not part of the capture. Its
    // ticket is the number of nodes this stream has issued into the capture
    // (what a wait for it joins back: Capture::joinedBack).
    auto completion =
        std::make_shared<Completion>(weak_from_this(), capture_->position(this), capture_);
    completion->complete();
    return completion;
  }
  auto completion = std::make_shared<Completion>(weak_from_this(), issued_);
  if (finished_ == issued_) {
    // Nothing is pending: the record is complete now, without a round trip
    // through the worker.
    completion->complete();
    return completion;
  }
  lock.unlock();
  // Tasks queued by other threads in between land before the marker; the
  // completion then covers them too, which only makes it later, never early.
  (void)enqueue([completion] {
    completion->complete();
    return acSuccess;
  }, "event record");  // not capturing: cannot fail
  return completion;
}

// LITERALINCLUDE START: RUNTIME STREAM WORKER
bool Stream::idle() const {
  // Without the lock: issued_ first, so that a task issued in between makes
  // the answer "busy", never "idle" early (finished_ never passes issued_).
  const uint64_t issued = issued_.load();
  return finished_.load() == issued;
}

acError_t Stream::takeError(uint64_t upTo) {
  if (!errorPending_.load()) {
    return acSuccess;  // the common case, without the lock
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ == acSuccess || errorTicket_ > upTo) {
    return acSuccess;
  }
  errorPending_.store(false);
  return std::exchange(error_, acSuccess);
}

void Stream::runBatch(std::vector<std::pair<uint64_t, Task>>& batch) {
  for (auto& [ticket, task] : batch) {
    started_ = ticket;
    if (roomWaiters_ > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      roomCv_.notify_one();  // one slot for one waiting launch
    }
    const acError_t result = runTask(task);
    // Release what the task captured (allocation references, user data
    // owners) before reporting it finished, so a synchronized stream holds
    // nothing.
    task = nullptr;
    if (result != acSuccess) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_ == acSuccess) {
        error_ = result;
        errorTicket_ = ticket;
        errorPending_.store(true);  // before finished_, which a synchronisation reads first
      }
    }
    finished_ = ticket;
    if (doneWaiters_ > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      doneCv_.notify_all();
    }
  }
  batch.clear();
}

void Stream::runWorker() {
  tWorkerStream = this;
  char name[16];
  std::snprintf(name, sizeof name, "accinte-dev%d", device_);
  (void)pthread_setname_np(pthread_self(), name);  // cosmetic: for debuggers and top
  // The worker's timed waits on its doorbell end within about a microsecond
  // of their time, not Linux's default 50 (Note [accinte worker doorbell]).
  // Its tasks, and threads they start, inherit the finer slack.
  (void)prctl(PR_SET_TIMERSLACK, 1000UL);

  const auto latency = std::chrono::microseconds(config().launchLatencyMicroseconds);
  std::vector<std::pair<uint64_t, Task>> batch;
  // Whether the worker may take pending_ (under the lock): a host thread
  // may be running a batch it took (Note [accinte a waiting host runs the queue]).
  const auto takeable = [&] { return !pending_.empty() && !executing_.load(); };
  bool justRan = false;  // the stream is busy: no launch latency
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
      lockBriefly(lock);
      if (justRan) {
        executing_.store(false);  // the worker's batch has run
      }
      for (;;) {
        if (takeable()) {
          // Note [accinte launch latency]
          const auto due = pendingSince() + latency;
          if (justRan || stopping_ || std::chrono::steady_clock::now() >= due) {
            break;
          }
          const uint64_t started = started_.load();
          lock.unlock();
          yieldUntil(due, [&] { return started_.load() != started; });
          lockBriefly(lock);
          continue;  // a host thread that came to wait may have taken it
        }
        if (stopping_) {
          break;
        }
        justRan = false;
        // Note [accinte spin before sleeping]: the next launch comes soon.
        const uint64_t rung = doorbell_.load();
        lock.unlock();
        const bool hinted = awaitDoorbell(rung, latency);
        lockBriefly(lock);
        if (!hinted && !takeable() && !stopping_) {
          workerSleeping_ = true;
          workCv_.wait(lock, [&] { return takeable() || stopping_; });
          workerSleeping_ = false;
        }
      }
      if (pending_.empty()) {
        return;  // stopping, and everything queued has run
      }
      executing_.store(true);
      batch.swap(pending_);
    }
    runBatch(batch);
    justRan = true;
  }
}
// LITERALINCLUDE END: RUNTIME STREAM WORKER

// LITERALINCLUDE START: RUNTIME WAITING HOST RUNS THE QUEUE
// Note [accinte a waiting host runs the queue]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A host thread that waits for a stream (acStreamSynchronize, a copy into
// pageable memory such as .item()'s, a device synchronisation) has nothing
// to do until the stream's tasks have run. If nobody has started them yet,
// it runs them itself, in order, instead of waiting for the worker to wake,
// take them and run them on another core: the hand-off costs a cross-core
// round trip, and the kernel there misses in the cache on every line the
// host has just written. It is the emulator lending the waiting thread to
// the device; to the program nothing changes: the same tasks run in the same
// order, one at a time (executing_ names the one thread that may take tasks
// from pending_), errors are kept for the same synchronisation, and code
// inside a task sees itself on the stream (onWorkerThread, the profiler's
// stream row). A thread already inside a task never does it (it waits, and
// the blocking calls refuse to run there anyway). Work queued after the
// wait began is left to the worker, which the host wakes if it sleeps.
// On the loaded 2-core machine it took the .item() round trip from about
// 3.1x the CPU's to 2.1x. On the idle machine the worker is quicker to take
// the work, hence Note [accinte launch latency].
bool Stream::runPendingHere(uint64_t target) {
  {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lockBriefly(lock);
    if (executing_.load() || pending_.empty()) {
      return false;  // the worker has them, or they have run
    }
    if (pending_.back().first <= target) {
      hostBatch_.swap(pending_);
    } else {
      // Tasks queued after the wait began (by other threads) stay for the
      // worker: the waiting thread runs what it waits for, no more.
      const auto end = std::find_if(pending_.begin(), pending_.end(),
                                    [&](const auto& queued) { return queued.first > target; });
      if (end == pending_.begin()) {
        // Everything queued came after the wait began: what it waited for
        // has run (another thread took it between the hint and the lock).
        return false;
      }
      // May throw: nothing moved yet.
      hostBatch_.reserve(static_cast<size_t>(end - pending_.begin()));
      std::move(pending_.begin(), end, std::back_inserter(hostBatch_));
      pending_.erase(pending_.begin(), end);
    }
    executing_.store(true);
  }
  const uint64_t last = hostBatch_.back().first;  // not empty: see above
  {
    const StreamWorkScope onStream(this);
    runBatch(hostBatch_);
  }
  executing_.store(false);
  if (issued_.load() == last) {
    // Nothing was queued meanwhile or left behind: nothing for the worker.
    // Anything queued from here on rings the doorbell itself (pending_ is
    // empty) and finds executing_ clear.
    return true;
  }
  bool wake = false;
  {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    lockBriefly(lock);
    if (!pending_.empty()) {
      ringDoorbell();  // launched meanwhile: the worker's again
      wake = workerSleeping_;
    }
  }
  if (wake) {
    workCv_.notify_one();  // launched meanwhile: the worker's again
  }
  return true;
}

void Stream::waitIdle() {
  waitFor(issued_.load());
}

void Stream::waitFor(uint64_t ticket) {
  // Never a ticket not issued yet: it would wait for work nobody queued.
  const uint64_t target = std::min(ticket, issued_.load());
  const bool mayRun = !onWorkerThread();
  const auto done = [&] { return finished_.load() >= target; };
  // A hint, read without the lock (runPendingHere decides under it): tasks
  // up to `target` that no thread has taken.
  const auto runnable = [&] { return mayRun && !executing_.load() && started_.load() < target; };
  for (;;) {
    if (done()) {
      return;
    }
    if (runnable() && runPendingHere(target)) {
      continue;
    }
    // Note [accinte spin before sleeping]
    if (!spinUntil([&] { return done() || runnable(); })) {
      break;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  ++doneWaiters_;
  doneCv_.wait(lock, done);
  --doneWaiters_;
}
// LITERALINCLUDE END: RUNTIME WAITING HOST RUNS THE QUEUE

}  // namespace accinte
