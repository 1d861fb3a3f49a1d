// stream.h: a stream (its worker thread and queue) and the completion signal
// that event records are made of (internal).
#ifndef ACCINTE_SRC_STREAM_H_
#define ACCINTE_SRC_STREAM_H_

#include "runtime.h"
#include "task.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace accinte {

class Capture;
class Stream;

// One event record: set once, when every task queued ahead of it on its
// stream has finished. Shared by the event (latest record), the marker task
// that sets it, and any stream told to wait for it, so it outlives all three
// as needed.
class Completion {
 public:
  Completion(std::weak_ptr<Stream> stream, uint64_t ticket,
             std::weak_ptr<Capture> capture = {})
      : stream_(std::move(stream)), ticket_(ticket), capture_(std::move(capture)) {}

  // Marks the record done and stamps the completion time. Wakes waiters.
  void complete();
  bool done() const;
  // Blocks until done.
  void wait() const;
  // When the record completed; meaningful once done() is true.
  std::chrono::steady_clock::time_point time() const;

  // The recording stream (may be gone by now) and the ticket of the last task
  // queued before the record: kernel errors up to it belong to the record.
  // For a captured record, the ticket counts the nodes the stream had issued
  // into the capture instead.
  const std::weak_ptr<Stream>& stream() const { return stream_; }
  uint64_t ticket() const { return ticket_; }
  // For a record made on a capturing stream: the capture, while it is active
  // (such a record marks a point in the graph, not in time); null otherwise.
  std::shared_ptr<Capture> activeCapture() const;

 private:
  const std::weak_ptr<Stream> stream_;
  const uint64_t ticket_;
  const std::weak_ptr<Capture> capture_;
  mutable std::mutex mutex_;
  mutable std::condition_variable doneCv_;
  bool done_ = false;
  std::chrono::steady_clock::time_point time_;
};

// A queue of tasks run in order, one at a time, by one worker thread started
// at the first enqueue, or by a host thread that waits for them (Note
// [accinte a waiting host runs the queue]). Every task gets a ticket (1, 2,
// ...) in queue order; the stream is
// idle when the last ticket issued has *finished* running, not merely left the
// queue. All members are thread-safe.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  // A task returns acSuccess, or an asynchronous error that the stream keeps
  // until a synchronizing call reports it. See Note [accinte tasks without
  // allocation].
  using Task = accinte::Task;

  Stream(int device, int priority, bool isDefault);
  // Lets the worker drain the queue, then joins it. Never runs on the
  // stream's own worker: no task owns a reference to its stream (records and
  // waits hold weak ones), and acStreamDestroy, which holds a reference until
  // the queue is drained, is refused on worker threads.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  int priority() const { return priority_; }
  bool isDefault() const { return isDefault_; }
  acStream_t handle() { return reinterpret_cast<acStream_t>(this); }

  // What enqueue does when the queue holds config().launchQueueDepth tasks
  // that have not started. See Note [accinte launch queue depth].
  enum class WhenFull {
    kWait,    // launches and asynchronous copies: wait for room
    kAppend,  // event records and waits: append anyway
  };

  // Appends a task and returns; a launch (WhenFull::kWait) from a host
  // thread first waits while the queue is full. While the stream is
  // capturing, hands the task to the capture instead (`kind` names it in the
  // graph), which fails with acErrorStreamCaptureInvalidated once the capture
  // is invalidated.
  acError_t enqueue(Task task, const char* kind = "task", WhenFull whenFull = WhenFull::kAppend);
  // Records an event: the returned completion is set once every task queued
  // so far has finished; at once if the stream is idle. While capturing, the
  // completion is a captured one (see Completion::activeCapture).
  std::shared_ptr<Completion> record();

  // The active capture, or null (capture.cpp sets and clears it).
  std::shared_ptr<Capture> capture() const;
  // Makes `capture` the stream's capture, in one step under the stream's
  // lock; false (and nothing changes) if the stream is capturing already.
  bool beginCapture(std::shared_ptr<Capture> capture);
  // The stream runs its work again.
  void clearCapture();

  // True when every task issued so far has finished. Lock-free.
  bool idle() const;
  // Blocks until every task queued before the call has finished. A host
  // thread runs the tasks itself when nobody has started them yet: see Note
  // [accinte a waiting host runs the queue].
  void waitIdle();
  // Blocks until the task with `ticket` (and all before it) has finished, as
  // waitIdle does; a ticket not issued yet counts as the last one issued.
  void waitFor(uint64_t ticket);
  // Returns and clears the pending asynchronous error if a task with a ticket
  // <= `upTo` raised it; acSuccess otherwise. The first error wins until read.
  acError_t takeError(uint64_t upTo = UINT64_MAX);

 private:
  void runWorker();
  // Runs a batch taken from pending_ (by the worker or a waiting host
  // thread, whichever set executing_), publishing started_/finished_ and
  // recording the first error; leaves `batch` empty.
  void runBatch(std::vector<std::pair<uint64_t, Task>>& batch);
  // On a host thread in waitIdle: takes the pending tasks up to ticket
  // `target` and runs them, if no thread is running the stream's tasks;
  // false (nothing run) otherwise.
  bool runPendingHere(uint64_t target);
  // On the idle worker: waits until the doorbell moves past `rung` with work
  // that nobody has started once the launch latency has passed (true), or
  // until the stream stops (true), or for config().spinMicroseconds (give or
  // take a doze) without a ring it has to act on (false). Dozes in steps of
  // half the latency; spins, yielding, when the latency is 0. Note [accinte
  // worker doorbell].
  bool awaitDoorbell(uint64_t rung, std::chrono::microseconds latency);
  // Rings the doorbell: pending_ just got work the idle worker should look
  // at. Under mutex_.
  void ringDoorbell();
  // When the oldest task in pending_ was queued (Note [accinte launch latency]).
  std::chrono::steady_clock::time_point pendingSince() const;

  const int device_;
  const int priority_;
  const bool isDefault_;

  // Note [accinte stream queue]: what the stream's lock guards, and what
  // the worker reads without it.
  mutable std::mutex mutex_;
  std::condition_variable workCv_;  // task queued while the worker sleeps, or stopping
  std::condition_variable doneCv_;  // a task finished while a host thread sleeps on it
  std::condition_variable roomCv_;  // a task started while a launch waits for room
  // Tasks queued and not yet taken by the worker, which takes all of them at
  // once by swapping this vector with its own (empty) one: neither side
  // allocates once both have grown to the usual burst.
  std::vector<std::pair<uint64_t, Task>> pending_;
  // The batch a waiting host thread took (runPendingHere), kept for its
  // capacity: one host thread at a time runs one (executing_).
  std::vector<std::pair<uint64_t, Task>> hostBatch_;
  bool workerSleeping_ = false;
  acError_t error_ = acSuccess;  // with errorPending_ below
  uint64_t errorTicket_ = 0;
  // Written under mutex_; read without it by the idle worker once rung.
  std::atomic<bool> stopping_{false};
  std::shared_ptr<Capture> capture_;
  std::thread worker_;
  // Host threads asleep on doneCv_ / roomCv_: the worker takes the lock to
  // wake them only when there are any.
  std::atomic<uint32_t> doneWaiters_{0};
  std::atomic<uint32_t> roomWaiters_{0};
  // Tickets handed out (written under mutex_), the ticket of the task
  // started last, and of the task that returned last (written without the
  // lock by the one thread that holds executing_). Each on a cache line of
  // its own (executing_ too, and the lines after it), so
  // that a spinning reader does not take from the writer the line it writes
  // next.
  alignas(64) std::atomic<uint64_t> issued_{0};
  alignas(64) std::atomic<uint64_t> started_{0};
  alignas(64) std::atomic<uint64_t> finished_{0};
  // A thread (the worker, or a host thread in waitIdle) has taken tasks from
  // pending_ and not finished them: nobody else may take any. Set under
  // mutex_; cleared under it too, except by a host thread whose batch ends
  // with the last task issued (runPendingHere: no task waits for it to
  // clear). Read without the lock only as a hint, by spinning threads.
  alignas(64) std::atomic<bool> executing_{false};
  // error_ holds an error nobody has taken yet (written under mutex_; read
  // without it by takeError, which then takes the lock only if set).
  alignas(64) std::atomic<bool> errorPending_{false};
  // Note [accinte worker doorbell]: the one line an idle worker reads while
  // it waits. doorbell_ counts rings (written under mutex_); pendingSince_
  // is when the oldest task in pending_ was queued, as steady_clock ticks
  // (Note [accinte launch latency]; written under mutex_, read without it
  // by the worker once rung).
  alignas(64) std::atomic<uint64_t> doorbell_{0};
  std::atomic<std::chrono::steady_clock::rep> pendingSince_{0};
  std::atomic<uint64_t> rungTicket_{0};  // the first task pending at the last ring
  // What the idle worker dozes on (awaitDoorbell): only it and the
  // destructor touch them, never a launch.
  std::mutex dozeMutex_;
  std::condition_variable dozeCv_;
};

// Marks the calling host thread as running `stream`'s work while it lives:
// tasks a waiting host runs (Note [accinte a waiting host runs the queue])
// and a copy into pageable memory done on the calling thread. Inside, the
// thread counts as the stream's worker: onWorkerThread() is true, and the
// profiler puts what it records on the stream's row.
class StreamWorkScope {
 public:
  explicit StreamWorkScope(const Stream* stream);
  ~StreamWorkScope();
  StreamWorkScope(const StreamWorkScope&) = delete;
  StreamWorkScope& operator=(const StreamWorkScope&) = delete;

 private:
  const Stream* const previous_;
};

// ---- the stream registry (stream_api.cpp) ----------------------------------

// Resolves a handle from the C API: NULL names the current device's default
// stream (created on first use); any other handle must be a live stream, else
// acErrorInvalidResourceHandle. Handles are only compared, never dereferenced,
// so a stale or garbage handle is detected safely.
acError_t resolveStream(acStream_t handle, std::shared_ptr<Stream>* stream);

// Called by a stream once, when its worker starts: from then on waits for
// the stream's device look at it (busyStreamsOf).
void noteWorkerStarted(const std::shared_ptr<Stream>& stream);

}  // namespace accinte

#endif  // ACCINTE_SRC_STREAM_H_
