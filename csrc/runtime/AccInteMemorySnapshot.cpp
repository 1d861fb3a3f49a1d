#include <csrc/runtime/AccInteMemorySnapshot.h>

#include <atomic>
#include <chrono>

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

} // namespace c10::accinte
