#include <csrc/runtime/AccInteMemorySnapshot.h>

#include <csrc/runtime/AccInteCachingAllocator.h>

#include <atomic>
#include <chrono>
#include <map>

namespace c10::accinte {
namespace {

std::mutex g_settings_mutex; // guards g_settings
HistorySettings g_settings;
// Copies of g_settings.record_trace and .when, read without the mutex on
// every allocation so that recording costs nothing while it is off.
std::atomic<bool> g_record_trace{false};
std::atomic<int> g_when{static_cast<int>(RecordContext::NEVER)};

// Microseconds since the Unix epoch, the unit of a snapshot's "time_us".
time_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

void set_history_settings(HistorySettings settings) {
  std::lock_guard<std::mutex> lock(g_settings_mutex);
  g_settings = std::move(settings);
  g_record_trace = g_settings.record_trace;
  g_when = static_cast<int>(g_settings.when);
}

bool history_records_trace() {
  return g_record_trace.load(std::memory_order_relaxed);
}

std::shared_ptr<c10::GatheredContext> gather_context(RecordContext level) {
  if (g_when.load(std::memory_order_relaxed) < static_cast<int>(level)) {
    return nullptr;
  }
  ContextRecorder recorder;
  {
    std::lock_guard<std::mutex> lock(g_settings_mutex);
    if (g_settings.when < level || !g_settings.recorder) {
      return nullptr;
    }
    recorder = g_settings.recorder;
  }
  // Outside the lock: the recorder may take the GIL (Note [accinte memory history]).
  return recorder();
}

void TraceBuffer::record(TraceEntry::Action action, DeviceIndex device, size_t addr,
                         size_t size, void* stream,
                         std::shared_ptr<c10::GatheredContext> context, RecordContext level) {
  size_t max_entries = 0;
  {
    std::lock_guard<std::mutex> lock(g_settings_mutex);
    if (!g_settings.record_trace) {
      return;
    }
    max_entries = g_settings.max_entries;
    if (g_settings.when < level) {
      context = nullptr;
    }
  }
  if (max_entries == 0) {
    return;
  }
  TraceEntry entry(action, device, addr, size, stream, MempoolId_t{0, 0}, 0, std::move(context));
  entry.time_.t_ = now_us();
  if (entries_.size() < max_entries && next_ == 0) {
    entries_.push_back(std::move(entry));
    return;
  }
  // Full: overwrite the oldest entry.
  next_ %= entries_.size();
  entries_[next_] = std::move(entry);
  next_ = (next_ + 1) % entries_.size();
}

std::vector<TraceEntry> TraceBuffer::entries() const {
  std::vector<TraceEntry> ordered;
  ordered.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    ordered.push_back(entries_[(next_ + i) % entries_.size()]);
  }
  return ordered;
}

void TraceBuffer::clear() {
  entries_.clear();
  next_ = 0;
}

// ---- the device allocator's side: its trace and its segments ----------------

namespace {
acStream_t stream_handle(DeviceIndex device, StreamId id) {
  return AccInteStream(Stream(Stream::UNSAFE, Device(DeviceType::PrivateUse1, device), id))
      .stream();
}
} // namespace

void DeviceCachingAllocator::record_trace(TraceEntry::Action action, const void* addr,
                                          size_t size, StreamId stream,
                                          std::shared_ptr<c10::GatheredContext> context,
                                          RecordContext level) {
  if (!history_records_trace()) {
    return;
  }
  trace_.record(action, device_, reinterpret_cast<size_t>(addr), size,
                stream_handle(device_, stream), std::move(context), level);
}

std::vector<TraceEntry> DeviceCachingAllocator::snapshot(std::vector<SegmentInfo>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (history_records_trace()) {
    // No stream: naming one would create the device's streams.
    trace_.record(TraceEntry::SNAPSHOT, device_, 0, 0, nullptr, nullptr, RecordContext::ALLOC);
  }
  // Every block is either in a pool or active; walk each segment from its head.
  std::map<char*, Block*> heads;
  auto add_head = [&](Block* block) {
    while (block->prev != nullptr) {
      block = block->prev;
    }
    heads.emplace(block->ptr, block);
  };
  for (Block* block : small_blocks_.blocks) add_head(block);
  for (Block* block : large_blocks_.blocks) add_head(block);
  for (Block* block : active_blocks_) add_head(block);
  for (const auto& [id, pool] : private_pools_) {
    for (Block* block : pool->small_blocks.blocks) add_head(block);
    for (Block* block : pool->large_blocks.blocks) add_head(block);
  }
  for (const auto& [address, head] : heads) {
    SegmentInfo segment;
    segment.device = device_;
    segment.address = reinterpret_cast<size_t>(address);
    segment.stream = stream_handle(device_, head->stream);
    segment.is_large = !head->pool->is_small;
    segment.is_expandable = head->expandable != nullptr;
    if (head->pool->owner != nullptr) {
      segment.owner_private_pool_id = head->pool->owner->id;
    }
    segment.context_when_allocated = head->context_when_segment_allocated;
    for (Block* block = head; block != nullptr; block = block->next) {
      c10::CachingDeviceAllocator::BlockInfo info;
      info.size = block->size;
      info.requested_size = block->requested_size;
      info.allocated = block->allocated;
      info.active = block->allocated || block->event_count > 0;
      info.context_when_allocated = block->context_when_allocated;
      segment.total_size += block->size;
      if (info.allocated) {
        segment.allocated_size += block->size;
        segment.requested_size += block->requested_size;
      }
      if (info.active) {
        segment.active_size += block->size;
      }
      segment.blocks.push_back(std::move(info));
    }
    out.push_back(std::move(segment));
  }
  return trace_.entries();
}

void DeviceCachingAllocator::clear_trace() {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.clear();
}

} // namespace c10::accinte
