#include <csrc/runtime/AccInteDeviceAllocator.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>

#include <c10/util/flat_hash_map.h>

#include <cstdio>
#include <mutex>
#include <vector>

namespace c10::accinte {

using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

namespace {

// Requests up to this size are counted in the "small_pool" statistics and
// larger ones in "large_pool", with the same 1 MiB boundary as CUDA.
constexpr size_t kSmallSize = 1 << 20;

struct Allocation {
  size_t size;
  DeviceIndex device;
};

void free_device_memory(void* ptr);

class AccInteDeviceAllocatorImpl final : public c10::DeviceAllocator {
 public:

  DataPtr allocate(size_t nbytes) override {
    const DeviceIndex device = current_device();
    mark_device_used(device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_device_memory, Device(DeviceType::PrivateUse1, device)};
    }
    void* ptr = nullptr;
    const acError_t error = acMalloc(&ptr, nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& stats = stats_for(device);
    if (error == acErrorMemoryAllocation) {
      stats.num_ooms += 1;
      size_t free = 0, total = 0;
      ACCINTE_CHECK(acMemGetInfo(&free, &total));
      TORCH_CHECK_WITH(
          OutOfMemoryError, false, "accinte out of memory on device accinte:", int(device),
          ": tried to allocate ", format_bytes(nbytes), " (", nbytes, " bytes); the device has ",
          format_bytes(total), " in total, ", format_bytes(free), " free and ",
          format_bytes(stats.allocated_bytes[0].current),
          " allocated by PyTorch. ACCINTE_DEVICE_MEMORY sets the capacity.");
    }
    ACCINTE_CHECK(error);
    allocations_[ptr] = Allocation{nbytes, device};
    update(stats, nbytes, +1);
    stats.num_device_alloc += 1;
    return {ptr, ptr, &free_device_memory, Device(DeviceType::PrivateUse1, device)};
  }

  void free(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = allocations_.find(ptr);
      TORCH_INTERNAL_ASSERT(it != allocations_.end(), "freeing unknown accinte pointer ", ptr);
      DeviceStats& stats = stats_for(it->second.device);
      update(stats, it->second.size, -1);
      stats.num_device_free += 1;
      allocations_.erase(it);
    }
    ACCINTE_CHECK_WARN(acFree(ptr));
  }

  DeleterFnPtr raw_deleter() const override { return &free_device_memory; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    ACCINTE_CHECK(acMemcpy(dest, src, count, acMemcpyDeviceToDevice));
  }

  bool initialized() override { return true; }

  void emptyCache(MempoolId_t /*mempool_id*/) override {
    // Nothing is cached: every free goes back to the runtime at once.
  }

  void recordStream(const DataPtr& /*ptr*/, c10::Stream /*stream*/) override {
    // acFree waits for the owning device's streams, so no use can outlive a
    // free and there is nothing to record.
  }

  DeviceStats getDeviceStats(DeviceIndex device) override {
    check_device_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_for(device);
  }

  void resetAccumulatedStats(DeviceIndex device) override {
    check_device_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceStats& stats = stats_for(device);
    for_each_stat_array(stats, [](auto& array) {
      for (auto& stat : array) {
        stat.reset_accumulated();
      }
    });
    stats.num_alloc_retries = 0;
    stats.num_ooms = 0;
    stats.num_device_alloc = 0;
    stats.num_device_free = 0;
  }

  void resetPeakStats(DeviceIndex device) override {
    check_device_index(device);
    std::lock_guard<std::mutex> lock(mutex_);
    for_each_stat_array(stats_for(device), [](auto& array) {
      for (auto& stat : array) {
        stat.reset_peak();
      }
    });
  }

  std::pair<size_t, size_t> getMemoryInfo(DeviceIndex device) override {
    AccInteGuard guard(device);
    size_t free = 0, total = 0;
    ACCINTE_CHECK(acMemGetInfo(&free, &total));
    return {free, total};
  }

 private:
  template <typename F>
  static void for_each_stat_array(DeviceStats& stats, F f) {
    f(stats.allocation);
    f(stats.segment);
    f(stats.active);
    f(stats.inactive_split);
    f(stats.allocated_bytes);
    f(stats.reserved_bytes);
    f(stats.active_bytes);
    f(stats.inactive_split_bytes);
    f(stats.requested_bytes);
  }

  // Without a cache every allocation is its own segment, active and fully
  // requested, so the count and byte statistics move together.
  static void update(DeviceStats& stats, size_t size, int direction) {
    const auto pool = static_cast<size_t>(size <= kSmallSize ? StatType::SMALL_POOL
                                                             : StatType::LARGE_POOL);
    for (const size_t type : {static_cast<size_t>(StatType::AGGREGATE), pool}) {
      for (auto* stat : {&stats.allocation[type], &stats.segment[type], &stats.active[type]}) {
        direction > 0 ? stat->increase(1) : stat->decrease(1);
      }
      for (auto* stat : {&stats.allocated_bytes[type], &stats.reserved_bytes[type],
                         &stats.active_bytes[type], &stats.requested_bytes[type]}) {
        direction > 0 ? stat->increase(size) : stat->decrease(size);
      }
    }
  }

  // Sized on first use rather than at load time: asking the runtime for the
  // device count while the library loads would initialise it in every
  // process that merely imports torch.
  DeviceStats& stats_for(DeviceIndex device) {
    if (stats_.empty()) {
      stats_.resize(device_count());
    }
    return stats_.at(device);
  }

  std::mutex mutex_; // guards stats_ and allocations_
  std::vector<DeviceStats> stats_;
  ska::flat_hash_map<void*, Allocation> allocations_;
};

// Leaked on purpose: tensors may be freed by static destructors at exit.
AccInteDeviceAllocatorImpl* g_allocator = new AccInteDeviceAllocatorImpl();

void free_device_memory(void* ptr) {
  g_allocator->free(ptr);
}

} // namespace

c10::DeviceAllocator* getDeviceAllocator() {
  return g_allocator;
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

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, g_allocator);

} // namespace c10::accinte
