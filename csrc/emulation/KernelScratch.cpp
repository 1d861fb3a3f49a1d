// Note [accinte kernel scratch memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// CPU kernels allocate their temporaries (flash attention's blocks, the
// partial sums of a reduction, a convolution's columns) with the CPU
// allocator, that is glibc's malloc, which gives the free top of a heap back
// to the system once it exceeds the trim threshold. Called on the CPU, a
// kernel also allocates its outputs on that heap, and they, like every other
// live tensor, keep the top in use. Run as an accinte kernel, its outputs
// are device memory: its temporaries sit alone at the top of the worker
// thread's heap, glibc trims them when the kernel frees them, and the next
// kernel maps and faults in every page again (an SDPA training step faulted
// 2,016 pages a warm step; with this cache, 1).
//
// A GPU kernel takes its workspace from device memory that the caching
// allocator keeps; accinte's kernels take theirs from this cache. The CPU
// allocator is wrapped once, when the device is initialised. While a thread
// runs a kernel's body (in_cpu_kernel(), CpuKernel.h), blocks of 128 KiB up
// to 32 MiB come from the cache when it holds one that fits (at most twice
// the size asked for), and go back to it when freed, on any thread; past
// 64 MiB of free blocks the least recently freed go back to the CPU's
// allocator, and the device allocator's empty_cache gives back all of them.
// Every other allocation goes to the CPU's allocator unchanged: outside
// kernels, small blocks (which stay in glibc's bins) and large ones (which
// glibc maps afresh on the CPU as well). The bounds are glibc's: its default
// mmap threshold, the largest it raises that threshold to, and the largest
// trim threshold that follows.
//
// The wrapper is the CPU allocator of every process that uses accinte, so
// what it adds elsewhere is kept small: a size test per allocation, and a
// raw free (raw_deallocate, which oneDNN uses) takes the cache's lock only
// once the cache has made a block.
#include <csrc/emulation/KernelScratch.h>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteLifecycle.h>

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace at::native::accinte {
namespace {

constexpr size_t kMinBytes = size_t{128} << 10;     // glibc's default mmap threshold
constexpr size_t kMaxBytes = size_t{32} << 20;      // the largest glibc raises it to
constexpr size_t kMaxCachedBytes = size_t{64} << 20; // the largest trim threshold
constexpr size_t kGranule = size_t{64} << 10;

// LITERALINCLUDE START: EXECUTION KERNEL SCRATCH
class KernelScratchAllocator final : public c10::Allocator {
 public:
  explicit KernelScratchAllocator(c10::Allocator* cpu) : cpu_(cpu) {}

  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes < kMinBytes || nbytes >= kMaxBytes || !in_cpu_kernel()) {
      return cpu_->allocate(nbytes);
    }
    const size_t size = (nbytes + kGranule - 1) / kGranule * kGranule;
    void* data = take(size);
    if (data == nullptr) {
      data = make(size);
    }
    // Context and data are one pointer: a simple DataPtr, as the CPU's.
    return {data, data, &give_back, c10::Device(c10::kCPU)};
  }

  // raw_allocate gives the raw pointer of either kind of block, so the raw
  // deleter takes both: blocks of the cache, and the CPU allocator's.
  c10::DeleterFnPtr raw_deleter() const override {
    return cpu_->raw_deleter() != nullptr ? &give_back : nullptr;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  KernelScratchStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    KernelScratchStats stats = stats_;
    stats.installed = true;
    return stats;
  }

  // Gives every free block back to the CPU's allocator.
  void release() {
    std::vector<c10::DataPtr> doomed;
    std::lock_guard<std::mutex> lock(mutex_);
    while (!free_.empty()) {
      doomed.push_back(evict_oldest());
    }
  } // the lock is let go first, then the blocks are freed

  // The one instance, made when the device is initialised.
  static KernelScratchAllocator* instance;

  // fork() happens with the lock held (pthread_atfork), so that a child
  // forked while a worker held it does not wait for it forever at its first
  // free of a block it inherited.
  static void lock_for_fork() { instance->mutex_.lock(); }
  static void unlock_after_fork() { instance->mutex_.unlock(); }

 private:
  struct Block {
    c10::DataPtr memory; // from the CPU's allocator
    size_t size;
    uint64_t freed_at = 0; // when it was last freed (for eviction)
  };

  // A free block of at least `size` bytes and at most twice that, or null.
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = free_.lower_bound(size);
    if (it == free_.end() || it->first > 2 * size) {
      ++stats_.misses;
      return nullptr;
    }
    void* data = it->second;
    stats_.cached_bytes -= it->first;
    free_.erase(it);
    ++stats_.hits;
    return data;
  }

  // A new block from the CPU's allocator; on failure, the cache's free
  // blocks go back to it first.
  void* make(size_t size) {
    c10::DataPtr memory;
    try {
      memory = cpu_->allocate(size);
    } catch (const c10::Error&) {
      release();
      memory = cpu_->allocate(size); // throws the CPU's error if it fails again
    }
    void* data = memory.get();
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(data, Block{std::move(memory), size});
    made_.store(true, std::memory_order_release);
    return data;
  }

  // Deleter of every block handed out, and the raw deleter: on any thread.
  static void give_back(void* data) { instance->keep(data); }

  void keep(void* data) {
    std::vector<c10::DataPtr> doomed;
    if (made_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = blocks_.find(data);
      if (it != blocks_.end()) {
        // Least recently freed first; a block (< 32 MiB) then always fits.
        while (stats_.cached_bytes + it->second.size > kMaxCachedBytes) {
          doomed.push_back(evict_oldest());
        }
        it->second.freed_at = ++clock_;
        free_.emplace(it->second.size, data);
        stats_.cached_bytes += it->second.size;
        ++stats_.returns;
        return; // the lock is let go first, then the evicted blocks are freed
      }
    }
    // Not a block of the cache: raw memory of the CPU allocator that
    // raw_deallocate gives back through this deleter.
    cpu_->raw_deleter()(data);
  }

  // Takes the least recently freed block out of the cache (under the lock);
  // the caller frees it after letting the lock go.
  c10::DataPtr evict_oldest() {
    auto oldest = free_.begin();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (blocks_.at(it->second).freed_at < blocks_.at(oldest->second).freed_at) {
        oldest = it;
      }
    }
    const auto block = blocks_.find(oldest->second);
    c10::DataPtr memory = std::move(block->second.memory);
    stats_.cached_bytes -= block->second.size;
    blocks_.erase(block);
    free_.erase(oldest);
    return memory;
  }

  c10::Allocator* const cpu_;
  mutable std::mutex mutex_;
  std::atomic<bool> made_{false};            // blocks_ was ever non-empty
  std::unordered_map<void*, Block> blocks_;  // every block made, free or not
  std::multimap<size_t, void*> free_;        // free blocks by size (at most 512)
  uint64_t clock_ = 0;                       // counts frees, for freed_at
  KernelScratchStats stats_;
};
// LITERALINCLUDE END: EXECUTION KERNEL SCRATCH

KernelScratchAllocator* KernelScratchAllocator::instance = nullptr;

// Wraps the CPU allocator in place when the device is initialised: PyTorch's
// own (priority 0), or one a program set before with a priority of at most
// 1. Memory the wrapped allocator handed out before still goes back to it
// (its DataPtrs carry their deleter; a raw free of it is passed on, keep()).
void install() {
  // Leaked: blocks may be freed until the process exits.
  KernelScratchAllocator::instance = new KernelScratchAllocator(c10::GetCPUAllocator());
  (void)pthread_atfork(&KernelScratchAllocator::lock_for_fork,
                       &KernelScratchAllocator::unlock_after_fork,
                       &KernelScratchAllocator::unlock_after_fork);
  c10::SetCPUAllocator(KernelScratchAllocator::instance, /*priority=*/1);
}

void release() {
  if (KernelScratchAllocator::instance != nullptr) {
    KernelScratchAllocator::instance->release();
  }
}

// Loading the library changes nothing of the process: the runtime calls
// install() when the device is initialised, release() at its empty_cache.
const bool registered = [] {
  c10::accinte::add_lifecycle_hooks({&install, &release});
  return true;
}();

} // namespace

KernelScratchStats kernel_scratch_stats() {
  const auto* scratch = KernelScratchAllocator::instance;
  return scratch != nullptr ? scratch->stats() : KernelScratchStats{};
}

} // namespace at::native::accinte
