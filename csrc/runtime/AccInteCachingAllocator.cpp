#include <csrc/runtime/AccInteCachingAllocator.h>

#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>


namespace c10::accinte {

using CachingAllocator::StatType;

namespace {

constexpr auto kAggregate = static_cast<size_t>(StatType::AGGREGATE);

template <typename F>
void for_each_stat_array(CachingDeviceAllocator::DeviceStats& stats, F f) {
  for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
                      &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                      &stats.inactive_split_bytes, &stats.requested_bytes}) {
    f(*array);
  }
}

// Applies f to the index of every selected statistic type.
template <typename Types, typename F>
void for_each_stat(const Types& types, F f) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i]) {
      f(i);
    }
  }
}

} // namespace

DeviceCachingAllocator::DeviceCachingAllocator(DeviceIndex device) : device_(device) {}

DeviceCachingAllocator::StatTypes DeviceCachingAllocator::stat_types(const BlockPool& pool) {
  StatTypes types{};
  types[kAggregate] = true;
  types[static_cast<size_t>(pool.is_small ? StatType::SMALL_POOL : StatType::LARGE_POOL)] = true;
  return types;
}

// LITERALINCLUDE START: PROFILER ALLOCATOR REPORT
// Every allocation and free, for torch.profiler's profile_memory=True (a
// no-op unless a profiler with memory profiling is active on this thread).
void DeviceCachingAllocator::report_usage_to_profiler(void* ptr, int64_t delta) const {
  c10::reportMemoryUsageToProfiler(ptr, delta, stats_.allocated_bytes[kAggregate].current,
                                   stats_.reserved_bytes[kAggregate].current,
                                   Device(DeviceType::PrivateUse1, device_));
}
// LITERALINCLUDE END: PROFILER ALLOCATOR REPORT

// LITERALINCLUDE START: ALLOCATOR MALLOC
Block* DeviceCachingAllocator::malloc(size_t nbytes, const AccInteStream& stream,
                                      std::shared_ptr<c10::GatheredContext> context) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (C10_UNLIKELY(nbytes > kMaxRequest)) {
    // No device is this large, and rounding such a size could wrap around
    // size_t (a 0-byte block): refused before any arithmetic.
    raise_out_of_memory(nbytes, nbytes, stream.id(), std::move(context));
  }
  // Blocks whose recorded streams have finished become reusable first; not
  // while a capture is underway, whose event records may not be queried
  // (see Note [accinte allocator during capture]).
  if (C10_LIKELY(!captures_underway())) {
    process_events();
  }
  const size_t size = round_size(nbytes);
  BlockPool& pool = pool_for(size, stream);
  Block* block = find_free_block(pool, stream.id(), size);
  if (block == nullptr) {
    const size_t alloc_size = segment_size(size);
    if (C10_UNLIKELY(garbage_collection_on())) {
      garbage_collect_cached_blocks(); // Note [accinte allocator settings]
    }
    // Note [accinte expandable segments]: the device's own pools only.
    const bool expandable = pool.owner == nullptr &&
        CachingAllocator::AcceleratorAllocatorConfig::use_expandable_segments();
    auto reserve = [&](bool is_retry) {
      if (!expandable) {
        return alloc_segment(alloc_size, pool, stream.id(), is_retry, context);
      }
      stats_.num_alloc_retries += is_retry ? 1 : 0;
      return grow_expandable_segment(pool, stream.id(), size, context);
    };
    block = reserve(/*is_retry=*/false);
    if (block == nullptr && C10_LIKELY(!captures_underway())) {
      // See Note [accinte caching allocator]: free the cache, retry once.
      release_cached_blocks();
      block = reserve(/*is_retry=*/true);
    }
    if (block == nullptr) {
      block = find_free_block_in_oom_pools(stream.id(), size); // MemPool(use_on_oom=True)
    }
    if (block == nullptr) {
      raise_out_of_memory(nbytes, alloc_size, stream.id(), std::move(context));
    }
  }
  return use_block(block, size, nbytes, std::move(context));
}

Block* DeviceCachingAllocator::find_free_block(BlockPool& pool, StreamId stream, size_t size) {
  if (C10_UNLIKELY(garbage_collection_on())) {
    pool.free_block_searches += 1; // the age clock of garbage collection
  }
  Block key(device_, stream, size, &pool, nullptr);
  const auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream || !may_serve((*it)->size, size)) {
    return nullptr;
  }
  Block* block = *it;
  pool.blocks.erase(it);
  return block;
}
// LITERALINCLUDE END: ALLOCATOR MALLOC

Block* DeviceCachingAllocator::alloc_segment(size_t size, BlockPool& pool, StreamId stream,
                                             bool is_retry,
                                             const std::shared_ptr<c10::GatheredContext>& context) {
  if (is_retry) {
    stats_.num_alloc_retries += 1;
  }
  if (reserved_ + size > allowed_) {
    return nullptr; // over set_per_process_memory_fraction's cap
  }
  void* ptr = nullptr;
  acError_t error = acSuccess;
  {
    AccInteGuard guard(device_);
    error = acMalloc(&ptr, size);
  }
  if (error == acErrorMemoryAllocation) {
    return nullptr;
  }
  if (error != acSuccess) {
    throw_runtime_error(error, "acMalloc(&ptr, size)", __FILE__, __LINE__);
  }
  reserved_ += size;
  if (pool.owner != nullptr) {
    pool.owner->segments += 1;
  }
  stats_.num_device_alloc += 1;
  for_each_stat(stat_types(pool), [&](size_t type) {
    stats_.segment[type].increase(1);
    stats_.reserved_bytes[type].increase(size);
  });
  auto* block = new Block(device_, stream, size, &pool, static_cast<char*>(ptr));
  block->context_when_segment_allocated = context;
  count_oversize(block, /*segment=*/true, /*add=*/true);
  record_trace(TraceEntry::SEGMENT_ALLOC, ptr, size, stream, context, RecordContext::ALLOC);
  return block;
}

// Hands `block` (taken out of its pool, or a new segment) to the user,
// splitting off what it does not need.
Block* DeviceCachingAllocator::use_block(Block* block, size_t size, size_t requested,
                                         std::shared_ptr<c10::GatheredContext> context) {
  BlockPool& pool = *block->pool;
  const StatTypes types = stat_types(pool);
  const bool already_split = block->is_split();
  if (should_split(block, size)) {
    Block* remaining = block;
    block = new Block(device_, remaining->stream, size, &pool, remaining->ptr);
    block->expandable = remaining->expandable;
    block->prev = remaining->prev;
    if (block->prev != nullptr) {
      block->prev->next = block;
    } else {
      block->context_when_segment_allocated = std::move(remaining->context_when_segment_allocated);
    }
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += size;
    remaining->size -= size;
    pool.insert(remaining);
    for_each_stat(types, [&](size_t type) {
      if (already_split) {
        // An inactive split block shrinks by what was taken from it.
        stats_.inactive_split_bytes[type].decrease(size);
      } else {
        // An unsplit block becomes split: its rest is a new inactive split block.
        stats_.inactive_split[type].increase(1);
        stats_.inactive_split_bytes[type].increase(remaining->size);
      }
    });
  } else if (already_split) {
    for_each_stat(types, [&](size_t type) {
      stats_.inactive_split[type].decrease(1);
      stats_.inactive_split_bytes[type].decrease(block->size);
    });
  }
  block->allocated = true;
  block->requested_size = requested;
  count_oversize(block, /*segment=*/false, /*add=*/true);
  block->context_when_allocated = context;
  active_blocks_.insert(block);
  for_each_stat(types, [&](size_t type) {
    stats_.allocation[type].increase(1);
    stats_.allocated_bytes[type].increase(block->size);
    stats_.active[type].increase(1);
    stats_.active_bytes[type].increase(block->size);
    stats_.requested_bytes[type].increase(requested);
  });
  record_trace(TraceEntry::ALLOC, block->ptr, requested, block->stream, std::move(context),
               RecordContext::ALLOC);
  report_usage_to_profiler(block->ptr, static_cast<int64_t>(block->size));
  return block;
}

// LITERALINCLUDE START: ALLOCATOR FREE AND RECORD STREAM
void DeviceCachingAllocator::free(Block* block, std::shared_ptr<c10::GatheredContext> context) {
  std::lock_guard<std::mutex> lock(mutex_);
  block->allocated = false;
  count_oversize(block, /*segment=*/false, /*add=*/false);
  for_each_stat(stat_types(*block->pool), [&](size_t type) {
    stats_.allocation[type].decrease(1);
    stats_.allocated_bytes[type].decrease(block->size);
  });
  record_trace(TraceEntry::FREE_REQUESTED, block->ptr, block->requested_size, block->stream,
               context, RecordContext::ALL);
  report_usage_to_profiler(block->ptr, -static_cast<int64_t>(block->size));
  if (block->stream_uses.empty()) {
    free_block(block, context);
  } else if (C10_UNLIKELY(captures_underway())) {
    deferred_until_no_capture_.push_back(block);
  } else {
    insert_events(block);
  }
}

void DeviceCachingAllocator::record_stream(Block* block, const AccInteStream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream.device_index() == device_ && stream.id() == block->stream) {
    return; // its own stream orders every use already
  }
  block->stream_uses.insert(stream.unwrap());
}
// LITERALINCLUDE END: ALLOCATOR FREE AND RECORD STREAM

// Returns an inactive block to its pool, merged with free neighbours.
void DeviceCachingAllocator::free_block(Block* block,
                                        const std::shared_ptr<c10::GatheredContext>& context) {
  record_trace(TraceEntry::FREE_COMPLETED, block->ptr, block->requested_size, block->stream,
               context ? context : block->context_when_allocated, RecordContext::ALL);
  const size_t original_size = block->size;
  const size_t requested = block->requested_size;
  block->requested_size = 0;
  block->context_when_allocated.reset();
  BlockPool& pool = *block->pool;
  int64_t split_blocks_change = 0;
  int64_t split_bytes_change = 0;
  for (Block* neighbour : {block->prev, block->next}) {
    const size_t subsumed = try_merge(block, neighbour, pool);
    if (subsumed > 0) {
      split_blocks_change -= 1;
      split_bytes_change -= static_cast<int64_t>(subsumed);
    }
  }
  active_blocks_.erase(block);
  pool.insert(block);
  if (block->is_split()) {
    split_blocks_change += 1;
    split_bytes_change += static_cast<int64_t>(block->size);
  }
  for_each_stat(stat_types(pool), [&](size_t type) {
    if (split_blocks_change > 0) {
      stats_.inactive_split[type].increase(split_blocks_change);
    } else if (split_blocks_change < 0) {
      stats_.inactive_split[type].decrease(-split_blocks_change);
    }
    if (split_bytes_change > 0) {
      stats_.inactive_split_bytes[type].increase(split_bytes_change);
    } else if (split_bytes_change < 0) {
      stats_.inactive_split_bytes[type].decrease(-split_bytes_change);
    }
    stats_.active[type].decrease(1);
    stats_.active_bytes[type].decrease(original_size);
    stats_.requested_bytes[type].decrease(requested);
  });
}

// Absorbs `src` into `dst` when src is a free neighbour; returns its size.
size_t DeviceCachingAllocator::try_merge(Block* dst, Block* src, BlockPool& pool) {
  if (src == nullptr || src->allocated || src->event_count > 0 || !src->stream_uses.empty()) {
    return 0;
  }
  pool.blocks.erase(src);
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) {
      dst->prev->next = dst;
    } else {
      dst->context_when_segment_allocated = std::move(src->context_when_segment_allocated);
    }
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) {
      dst->next->prev = dst;
    }
  }
  const size_t subsumed = src->size;
  dst->size += subsumed;
  delete src;
  return subsumed;
}

// Note [accinte allocator during capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// While any capture is underway (acCapturesUnderway), the allocator avoids
// every runtime call that a capture forbids, as CUDACachingAllocator does:
//   - an event recorded on a capturing stream marks a point in the graph,
//     not in time, and querying it invalidates the capture; so a block freed
//     with recorded stream uses is put aside (deferred_until_no_capture_)
//     instead of recording events, and malloc does not process events; the
//     first malloc after the last capture ends records the deferred events
//     on streams that then run live work, and proceeds as usual;
//   - acFree waits for the device, which a capture forbids; so an
//     allocation that does not fit is not retried after releasing the cache
//     (the OutOfMemoryError says why), and empty_cache does nothing.
// The test is process-wide and conservative: a capture on another device
// also defers this device's events. None of this touches allocations that
// belong to the capture; they come from its private pool (Note [accinte
// graph memory]).

// LITERALINCLUDE START: ALLOCATOR STREAM EVENTS
void DeviceCachingAllocator::insert_events(Block* block) {
  for (const Stream& stream : block->stream_uses) {
    AccInteEvent event;
    event.record(AccInteStream(stream));
    block->event_count += 1;
    outstanding_events_[stream].emplace_back(std::move(event), block);
  }
  block->stream_uses.clear();
}

void DeviceCachingAllocator::insert_deferred_events() {
  for (Block* block : deferred_until_no_capture_) {
    insert_events(block);
  }
  deferred_until_no_capture_.clear();
}

void DeviceCachingAllocator::process_events() {
  insert_deferred_events();
  for (auto it = outstanding_events_.begin(); it != outstanding_events_.end();) {
    auto& queue = it->second;
    // Events on one stream complete in record order: stop at the first busy one.
    while (!queue.empty() && queue.front().first.query()) {
      Block* block = queue.front().second;
      queue.pop_front();
      if (--block->event_count == 0) {
        free_block(block, nullptr);
      }
    }
    it = queue.empty() ? outstanding_events_.erase(it) : std::next(it);
  }
}
// LITERALINCLUDE END: ALLOCATOR STREAM EVENTS

void DeviceCachingAllocator::synchronize_and_free_events() {
  stats_.num_sync_all_streams += 1;
  insert_deferred_events();
  for (auto& [stream, queue] : outstanding_events_) {
    for (auto& [event, block] : queue) {
      event.synchronize();
      if (--block->event_count == 0) {
        free_block(block, nullptr);
      }
    }
  }
  outstanding_events_.clear();
}

void DeviceCachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  for (BlockPool* pool : {&large_blocks_, &small_blocks_}) {
    for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
      Block* block = *it++;
      if (block->expandable != nullptr) {
        shrink_expandable_segment(block); // changes or erases `block` only
      } else if (!block->is_split()) {
        release_segment(block);
      }
    }
  }
  release_private_pools();
}

// Returns a whole free segment to the runtime. acFree first waits for the
// device's streams, so no queued work can still be using it.
void DeviceCachingAllocator::release_segment(Block* block) {
  ACCINTE_CHECK(acFree(block->ptr));
  count_oversize(block, /*segment=*/true, /*add=*/false);
  BlockPool& pool = *block->pool;
  reserved_ -= block->size;
  if (pool.owner != nullptr) {
    pool.owner->segments -= 1;
  }
  stats_.num_device_free += 1;
  for_each_stat(stat_types(pool), [&](size_t type) {
    stats_.segment[type].decrease(1);
    stats_.reserved_bytes[type].decrease(block->size);
  });
  record_trace(TraceEntry::SEGMENT_FREE, block->ptr, block->size, block->stream, nullptr,
               RecordContext::ALLOC);
  pool.blocks.erase(block);
  delete block;
}

void DeviceCachingAllocator::empty_cache() {
  if (captures_underway()) {
    TORCH_WARN_ONCE("accinte: empty_cache() does nothing while a graph capture is underway: "
                    "returning memory to the device would invalidate the capture. Call it "
                    "after capture_end().");
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_blocks();
}

void DeviceCachingAllocator::raise_out_of_memory(size_t nbytes, size_t size, StreamId stream,
                                                 std::shared_ptr<c10::GatheredContext> context) {
  stats_.num_ooms += 1;
  size_t device_free = 0;
  size_t device_total = 0;
  {
    AccInteGuard guard(device_);
    ACCINTE_CHECK(acMemGetInfo(&device_free, &device_total));
  }
  // An OOM entry's address is the memory the device still reports free.
  record_trace(TraceEntry::OOM, reinterpret_cast<void*>(device_free), size, stream,
               std::move(context), RecordContext::ALLOC);
  const size_t allocated = stats_.allocated_bytes[kAggregate].current;
  const size_t reserved = stats_.reserved_bytes[kAggregate].current;
  c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(size), allocated, reserved,
                                   Device(DeviceType::PrivateUse1, device_));
  std::string cap;
  if (captures_underway()) {
    cap = "; the cache was not released to make room, because a graph capture is underway "
          "and returning memory to the device would invalidate it";
  }
  if (allowed_ != SIZE_MAX) {
    cap += "; this process may reserve at most " + format_bytes(allowed_) +
          " (set_per_process_memory_fraction(" + c10::str(fraction_) + "))";
  }
  C10_THROW_ERROR(
      OutOfMemoryError,
      c10::str("accinte out of memory on device accinte:", int(device_), ": tried to allocate ",
               format_bytes(nbytes), " (", nbytes, " bytes); the device has ",
               format_bytes(device_total), " in total, ", format_bytes(device_free), " free", cap,
               ". PyTorch has ", format_bytes(allocated), " allocated and ",
               format_bytes(reserved), " reserved (", format_bytes(reserved - allocated),
               " of it cached but unused). ACCINTE_DEVICE_MEMORY sets the capacity."));
}

CachingDeviceAllocator::DeviceStats DeviceCachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  CachingDeviceAllocator::DeviceStats stats = stats_;
  // As CUDA reports it: -1 (SIZE_MAX) while every block may be split.
  using Config = CachingAllocator::AcceleratorAllocatorConfig;
  stats.max_split_size = static_cast<int64_t>(Config::max_split_size());
  return stats;
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for_each_stat_array(stats_, [](CachingAllocator::StatArray& array) {
    for (auto& stat : array) {
      stat.reset_accumulated();
    }
  });
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for_each_stat_array(stats_, [](CachingAllocator::StatArray& array) {
    for (auto& stat : array) {
      stat.reset_peak();
    }
  });
}

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  TORCH_CHECK(fraction >= 0.0 && fraction <= 1.0, "Invalid memory fraction ", fraction,
              " for accinte:", int(device_), ": expected a value between 0 and 1");
  const size_t capacity = get_device_properties(device_).totalGlobalMem;
  std::lock_guard<std::mutex> lock(mutex_);
  fraction_ = fraction;
  allowed_ = fraction == 1.0 ? SIZE_MAX : static_cast<size_t>(fraction * capacity);
  fraction_limit_ = static_cast<size_t>(fraction * capacity);
}

double DeviceCachingAllocator::memory_fraction() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fraction_;
}

} // namespace c10::accinte
