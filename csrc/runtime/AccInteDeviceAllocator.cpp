#include <csrc/runtime/AccInteDeviceAllocator.h>

#include <csrc/runtime/AccInteCachingAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteLifecycle.h>

#include <c10/util/flat_hash_map.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {
namespace {

void free_device_memory(void* ptr);

class AccInteDeviceAllocatorImpl final : public c10::DeviceAllocator {
 public:
// LITERALINCLUDE START: ALLOCATOR FACADE
  DataPtr allocate(size_t nbytes) override {
    // A negative size from Python (torch.UntypedStorage(-1)) arrives here
    // wrapped to a huge size_t; refused as the CPU allocator refuses it.
    TORCH_CHECK(static_cast<int64_t>(nbytes) >= 0, "accinte: cannot allocate a negative "
                "number of bytes (", static_cast<int64_t>(nbytes), ")");
    const DeviceIndex device = current_device();
    mark_device_used(device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_device_memory, Device(DeviceType::PrivateUse1, device)};
    }
    // Before any lock: see Note [accinte memory history].
    auto context = gather_context(RecordContext::STATE);
    Block* block = device_allocator(device).malloc(nbytes, getCurrentAccInteStream(device),
                                                   std::move(context));
    {
      std::lock_guard<std::mutex> lock(blocks_mutex_);
      blocks_[block->ptr] = block;
    }
    return {block->ptr, block->ptr, &free_device_memory, Device(DeviceType::PrivateUse1, device)};
  }

  void free(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    auto context = gather_context(RecordContext::ALL);
    Block* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(blocks_mutex_);
      auto it = blocks_.find(ptr);
      TORCH_INTERNAL_ASSERT(it != blocks_.end(), "freeing unknown accinte pointer ", ptr);
      block = it->second;
      blocks_.erase(it);
    }
    device_allocator(block->device).free(block, std::move(context));
  }
// LITERALINCLUDE END: ALLOCATOR FACADE

  DeleterFnPtr raw_deleter() const override { return &free_device_memory; }

  bool allocated_in_pool(const void* ptr, MempoolId_t id) {
    std::lock_guard<std::mutex> lock(blocks_mutex_);
    const auto it = blocks_.find(const_cast<void*>(ptr));
    return it != blocks_.end() && it->second->pool->owner != nullptr &&
           it->second->pool->owner->id == id;
  }

// LITERALINCLUDE START: ALLOCATOR COPY DATA
  // Note [accinte copy-on-write copies]
  // PyTorch calls copy_data through Allocator::clone to materialize a
  // copy-on-write storage (a lazy clone written to): `src` is the shared
  // block, `dest` a block clone() just allocated. The copy waits for the
  // device and runs before copy_data returns (acMemcpy), as CUDA's cudaMemcpy
  // on the legacy default stream is ordered with the other blocking streams.
  // Queuing it on the current stream alone is not enough: the other owner
  // of `src`, now its last owner, writes it without a copy, maybe on another
  // stream, which nothing orders after a queued copy (a lazy clone then
  // takes the later value), and a copy between devices orders its bytes
  // before it knows a copy-on-write copy will be queued. While the stream
  // captures, nothing may wait: the copy becomes a node of the graph, on the
  // current stream, and `src` is recorded on it (as Tensor.record_stream)
  // so that its block outlives the copy.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    // copy_data is const in c10::Allocator; recording a use of a block is
    // bookkeeping of the (non-const) pools, as recordStream does.
    const_cast<AccInteDeviceAllocatorImpl*>(this)->copy_shared_block(dest, src, count);
  }
// LITERALINCLUDE END: ALLOCATOR COPY DATA

  bool initialized() override { return true; }

  void emptyCache(MempoolId_t mempool_id) override {
    const bool one_pool = mempool_id != MempoolId_t{0, 0};
    for (DeviceIndex device = 0; device < device_count(); ++device) {
      if (one_pool) {
        device_allocator(device).empty_pool_cache(mempool_id);
      } else {
        device_allocator(device).empty_cache();
      }
    }
    if (!one_pool) {
      run_empty_cache_hooks(); // the emulation's kernel scratch cache, say
    }
  }

  /// See Note [accinte copy-on-write copies].
  void copy_shared_block(void* dest, const void* src, std::size_t count) {
    if (count == 0) {
      return;
    }
    Block* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(blocks_mutex_);
      const auto it = blocks_.find(const_cast<void*>(src));
      block = it == blocks_.end() ? nullptr : it->second;
    }
    // Not a block of ours (c10::Allocator requires one) or not capturing:
    // copied before returning.
    if (block == nullptr || !is_stream_capturing(getCurrentAccInteStream(block->device))) {
      HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
      ACCINTE_CHECK(acMemcpy(dest, src, count, acMemcpyDeviceToDevice));
      return;
    }
    const AccInteStream stream = getCurrentAccInteStream(block->device);
    ACCINTE_CHECK(acMemcpyAsync(dest, src, count, acMemcpyDeviceToDevice, stream.stream()));
    device_allocator(block->device).record_stream(block, stream);
  }

// LITERALINCLUDE START: ALLOCATOR RECORD STREAM FACADE
  void recordStream(const DataPtr& ptr, c10::Stream stream) override {
    // Empty tensors and memory this allocator did not hand out (from_blob)
    // have nothing to protect.
    if (ptr.get() == nullptr || ptr.get_deleter() != &free_device_memory) {
      return;
    }
    Block* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(blocks_mutex_);
      auto it = blocks_.find(ptr.get());
      TORCH_INTERNAL_ASSERT(it != blocks_.end(), "recordStream on unknown accinte pointer ",
                            ptr.get());
      block = it->second;
    }
    device_allocator(block->device).record_stream(block, AccInteStream(stream));
  }
// LITERALINCLUDE END: ALLOCATOR RECORD STREAM FACADE

  CachingDeviceAllocator::DeviceStats getDeviceStats(DeviceIndex device) override {
    return device_allocator(device).stats();
  }

  void resetAccumulatedStats(DeviceIndex device) override {
    device_allocator(device).reset_accumulated_stats();
  }

  void resetPeakStats(DeviceIndex device) override {
    device_allocator(device).reset_peak_stats();
  }

  std::pair<size_t, size_t> getMemoryInfo(DeviceIndex device) override {
    AccInteGuard guard(device);
    size_t free = 0, total = 0;
    ACCINTE_CHECK(acMemGetInfo(&free, &total));
    return {free, total};
  }

  /// The allocator of `device`; throws on a bad index.
  DeviceCachingAllocator& device_allocator(DeviceIndex device) {
    // A forked child must not wait for a lock its parent's threads may have
    // held at fork() (Note [accinte fork safety]): statistics, empty_cache
    // and allocation there fail instead.
    TORCH_CHECK(!in_bad_fork(), "accinte: the caching allocator cannot be used in a child "
                "forked after accinte was initialised; start processes with 'spawn'");
    // Created on first use rather than at load time: asking the runtime for
    // the device count while the library loads would initialise it in every
    // process that merely imports torch.
    std::call_once(created_, [this] {
      for (DeviceIndex i = 0; i < device_count(); ++i) {
        devices_.push_back(std::make_unique<DeviceCachingAllocator>(i));
      }
    });
    check_device_index(device);
    return *devices_.at(device);
  }

 private:
  std::once_flag created_;
  std::vector<std::unique_ptr<DeviceCachingAllocator>> devices_;
  std::mutex blocks_mutex_; // guards blocks_
  ska::flat_hash_map<void*, Block*> blocks_; // allocated blocks by address
};

// Leaked on purpose: tensors may be freed by static destructors at exit.
AccInteDeviceAllocatorImpl* g_allocator = new AccInteDeviceAllocatorImpl();

// The deleter of every DataPtr: it runs in destructors, so a failure is
// reported as a warning rather than terminating the process.
void free_device_memory(void* ptr) {
  if (C10_UNLIKELY(in_bad_fork())) {
    return;  // see Note [accinte fork safety]
  }
  try {
    g_allocator->free(ptr);
  } catch (const std::exception& e) {
    TORCH_WARN("accinte: freeing device memory at ", ptr, " failed: ", e.what());
  }
}

} // namespace

c10::DeviceAllocator* getDeviceAllocator() {
  return g_allocator;
}

void set_memory_fraction(double fraction, DeviceIndex device) {
  g_allocator->device_allocator(device).set_memory_fraction(fraction);
}

double get_memory_fraction(DeviceIndex device) {
  return g_allocator->device_allocator(device).memory_fraction();
}

void record_history(HistorySettings settings, bool clear_history) {
  set_history_settings(std::move(settings));
  if (clear_history) {
    for (DeviceIndex device = 0; device < device_count(); ++device) {
      g_allocator->device_allocator(device).clear_trace();
    }
  }
}

SnapshotInfo snapshot() {
  SnapshotInfo info;
  for (DeviceIndex device = 0; device < device_count(); ++device) {
    info.device_traces.push_back(g_allocator->device_allocator(device).snapshot(info.segments));
  }
  return info;
}

void begin_allocate_to_pool(DeviceIndex device, MempoolId_t id,
                            std::function<bool(const AccInteStream&)> filter) {
  g_allocator->device_allocator(device).begin_allocate_to_pool(id, std::move(filter));
}

void end_allocate_to_pool(DeviceIndex device, MempoolId_t id) {
  g_allocator->device_allocator(device).end_allocate_to_pool(id);
}

void release_pool(DeviceIndex device, MempoolId_t id) {
  g_allocator->device_allocator(device).release_pool(id);
}

void create_or_incref_pool(DeviceIndex device, MempoolId_t id, bool use_on_oom, bool no_split) {
  g_allocator->device_allocator(device).create_or_incref_pool(id,
                                                              PoolOptions{use_on_oom, no_split});
}

int pool_use_count(DeviceIndex device, MempoolId_t id) {
  return g_allocator->device_allocator(device).pool_use_count(id);
}

void empty_pool_cache(DeviceIndex device, MempoolId_t id) {
  g_allocator->device_allocator(device).empty_pool_cache(id);
}

size_t pool_reserved_bytes(DeviceIndex device, MempoolId_t id) {
  return g_allocator->device_allocator(device).pool_reserved_bytes(id);
}

bool allocated_in_pool(const void* ptr, MempoolId_t id) {
  return g_allocator->allocated_in_pool(ptr, id);
}

std::string format_bytes(size_t bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return buffer;
}

// LITERALINCLUDE START: ALLOCATOR REGISTRATION
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, g_allocator);
// LITERALINCLUDE END: ALLOCATOR REGISTRATION

} // namespace c10::accinte
