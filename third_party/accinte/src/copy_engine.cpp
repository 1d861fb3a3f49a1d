// copy_engine.cpp: large copies shared between the calling thread and a pool
// of helper threads.
//
// A job is cut into chunks of kChunkBytes that any participant claims with an
// atomic counter: the calling thread claims chunks until none are left, and
// helpers that wake up in time claim some too. A helper that wakes up late
// finds nothing to claim and drops its reference to the job. The caller then
// waits only for chunks already claimed by helpers, so no job ever waits for
// a helper to become free (no deadlock when several streams copy at once).
//
// Helpers are created on first use (hardware threads - 1, at most
// kMaxHelpers) and, like every runtime singleton, never destroyed (runtime.h).
#include "copy_engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <sys/mman.h>

namespace accinte {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr unsigned kMaxHelpers = 7;

// One split copy or memset.
class Job {
 public:
  Job(size_t count, std::function<void(size_t begin, size_t end)> run)
      : count_(count), chunks_((count + kChunkBytes - 1) / kChunkBytes), run_(std::move(run)) {}

  // Claims and runs chunks until none are left.
  void work() {
    for (size_t i = next_.fetch_add(1); i < chunks_; i = next_.fetch_add(1)) {
      run_(i * kChunkBytes, std::min(count_, (i + 1) * kChunkBytes));
      if (done_.fetch_add(1) + 1 == chunks_) {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.notify_all();
      }
    }
  }

  // Blocks until every chunk has run (after work() returned on this thread).
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return done_.load() == chunks_; });
  }

  size_t chunks() const { return chunks_; }

 private:
  const size_t count_;
  const size_t chunks_;
  const std::function<void(size_t, size_t)> run_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> done_{0};
  std::mutex mutex_;
  std::condition_variable finished_;
};

class CopyEngines {
 public:
  static CopyEngines& get() {
    static CopyEngines* engines = new CopyEngines();  // never destroyed: see runtime.h
    return *engines;
  }

  // Runs `job` on the calling thread and up to chunks - 1 helpers.
  void run(const std::shared_ptr<Job>& job) {
    const size_t helpers = std::min<size_t>(helpers_, job->chunks() - 1);
    if (helpers > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < helpers; ++i) {
        queue_.push_back(job);
      }
      wake_.notify_all();
    }
    job->work();
    job->wait();
  }

 private:
  CopyEngines() {
    const unsigned threads = std::thread::hardware_concurrency();
    helpers_ = std::min(kMaxHelpers, threads > 1 ? threads - 1 : 0u);
    for (unsigned i = 0; i < helpers_; ++i) {
      std::thread([this] { serve(); }).detach();
    }
  }

  void serve() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->work();
    }
  }

  unsigned helpers_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
};

bool overlaps(const void* a, const void* b, size_t count) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return x < y + count && y < x + count;
}

}  // namespace

void copyBytes(void* dst, const void* src, size_t count) {
  if (count < kParallelBytes || overlaps(dst, src, count)) {
    std::memmove(dst, src, count);
    return;
  }
  auto* to = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  CopyEngines::get().run(std::make_shared<Job>(
      count, [to, from](size_t begin, size_t end) {
        std::memcpy(to + begin, from + begin, end - begin);
      }));
}

void adviseHugePages(void* dst, size_t count) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (count < kHugePageAdviceBytes) {
    return;
  }
  const auto begin = reinterpret_cast<uintptr_t>(dst);
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + count) & ~(kHuge - 1);
  if (last > first) {
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#else
  (void)dst;
  (void)count;
#endif
}

void setBytes(void* dst, int value, size_t count) {
  if (count < kParallelBytes) {
    std::memset(dst, value, count);
    return;
  }
  auto* to = static_cast<char*>(dst);
  CopyEngines::get().run(std::make_shared<Job>(
      count, [to, value](size_t begin, size_t end) {
        std::memset(to + begin, value, end - begin);
      }));
}

}  // namespace accinte
