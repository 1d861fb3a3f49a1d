// The Kineto activity profiler of accinte. See Note [accinte profiler].
#include <csrc/profiler/AccInteActivityProfiler.h>

#ifdef USE_KINETO

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteStream.h>

#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <unistd.h>

#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace c10::accinte {
namespace {

using libkineto::ActivityType;

// LITERALINCLUDE START: PROFILER REQUESTED KINDS
// The runtime kinds behind the Kineto types requested. Empty unless a device
// type is requested: a CPU-only trace asks for PRIVATEUSE1_RUNTIME too, and
// must not pay for it (see Note [accinte profiler]).
std::vector<acActivityKind> requested_kinds(const std::set<ActivityType>& types) {
  std::vector<acActivityKind> kinds;
  if (types.count(ActivityType::CONCURRENT_KERNEL)) {
    kinds.push_back(acActivityKindKernel);
  }
  if (types.count(ActivityType::GPU_MEMCPY)) {
    kinds.push_back(acActivityKindMemcpy);
  }
  if (types.count(ActivityType::GPU_MEMSET)) {
    kinds.push_back(acActivityKindMemset);
  }
  if (!kinds.empty() && types.count(ActivityType::PRIVATEUSE1_RUNTIME)) {
    kinds.push_back(acActivityKindRuntime);
    kinds.push_back(acActivityKindSynchronization);
  }
  return kinds;
}
// LITERALINCLUDE END: PROFILER REQUESTED KINDS

const char* copy_name(acMemcpyKind kind) {
  switch (kind) {
    case acMemcpyHostToDevice: return "Memcpy HtoD (Host -> accinte)";
    case acMemcpyDeviceToHost: return "Memcpy DtoH (accinte -> Host)";
    case acMemcpyDeviceToDevice: return "Memcpy DtoD (accinte -> accinte)";
    default: return "Memcpy HtoH (Host -> Host)";
  }
}

// The trace's row (tid) of a stream: its c10 stream id, which is what
// torch.accinte.Stream.stream_id shows. Runtime streams made outside the
// pools get rows from 1000 on.
class StreamRows {
 public:
  int32_t row(int device, acStream_t handle) {
    const auto key = std::make_pair(device, handle);
    if (const auto it = rows_.find(key); it != rows_.end()) {
      return it->second;
    }
    const auto id = stream_id_of(static_cast<DeviceIndex>(device), handle);
    const int32_t row = id.has_value() ? static_cast<int32_t>(*id) : 1000 + unnamed_++;
    rows_.emplace(key, row);
    return row;
  }

 private:
  std::map<std::pair<int, acStream_t>, int32_t> rows_;
  int32_t unnamed_ = 0;
};

std::vector<acActivityRecord> read_records() {
  std::vector<acActivityRecord> records;
  std::vector<acActivityRecord> portion(4096);
  for (;;) {
    size_t n = 0;
    ACCINTE_CHECK(acActivityGetRecords(portion.data(), portion.size(), &n));
    records.insert(records.end(), portion.begin(), portion.begin() + static_cast<ptrdiff_t>(n));
    if (n < portion.size()) {
      return records;
    }
  }
}

class AccInteActivityProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit AccInteActivityProfilerSession(std::vector<acActivityKind> kinds)
      : kinds_(std::move(kinds)) {}
  ~AccInteActivityProfilerSession() override { disable(); }

  void start() override {
    ACCINTE_CHECK(acActivityClear());
    for (const acActivityKind kind : kinds_) {
      ACCINTE_CHECK(acActivityEnable(kind));
    }
    enabled_ = true;
  }

  void stop() override {
    disable();
    ACCINTE_CHECK(acActivityFlushAll());
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0,
                 std::numeric_limits<int64_t>::max());
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback get_linked, int64_t start_time,
                    int64_t end_time) override;

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    // Kineto takes one process row per session: the first device's. The
    // others were handed to the logger by processTrace.
    const int device = devices_.empty() ? 0 : *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(device_info(device));
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return resources_; }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override {
    ACCINTE_CHECK_WARN(acActivityPushExternalCorrelationId(id));
  }
  // An operator that began before the session pushed nothing: an empty
  // stack is not an error here.
  void popCorrelationId() override { (void)acActivityPopExternalCorrelationId(nullptr); }

  std::string getDeviceProperties() override;

 private:
  void disable() {
    if (!enabled_) {
      return;
    }
    for (const acActivityKind kind : kinds_) {
      ACCINTE_CHECK_WARN(acActivityDisable(kind));
    }
    enabled_ = false;
  }

  static libkineto::DeviceInfo device_info(int device) {
    const std::string name = "accinte " + std::to_string(device);
    // Sorted after the host's rows, as Kineto sorts GPUs.
    return libkineto::DeviceInfo{device, 0x1000000 + device, name, name};
  }

  const std::vector<acActivityKind> kinds_;
  bool enabled_ = false;
  std::set<int> devices_;
  std::vector<libkineto::ResourceInfo> resources_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

// LITERALINCLUDE START: PROFILER PROCESS TRACE
void AccInteActivityProfilerSession::processTrace(libkineto::ActivityLogger& logger,
                                                  libkineto::getLinkedActivityCallback get_linked,
                                                  int64_t start_time, int64_t end_time) {
  const std::vector<acActivityRecord> records = read_records();
  // Runtime correlation id -> the CPU operator's id, and the calls that
  // queued device work (where launch arrows start).
  std::unordered_map<uint64_t, uint64_t> external;
  std::unordered_set<uint64_t> launched;
  for (const acActivityRecord& r : records) {
    if (r.kind == acActivityKindExternalCorrelation) {
      external.emplace(r.correlationId, r.externalId);
    } else if (r.kind == acActivityKindKernel || r.kind == acActivityKindMemcpy ||
               r.kind == acActivityKindMemset) {
      launched.insert(r.correlationId);
    }
  }
  buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
  buffer_->span = libkineto::TraceSpan(start_time, end_time, "accinte");
  buffer_->gpuOpCount = 0;
  StreamRows rows;
  std::set<std::pair<int, int32_t>> streams_seen;
  const int32_t pid = static_cast<int32_t>(getpid());

  for (const acActivityRecord& r : records) {
    if (r.kind == acActivityKindExternalCorrelation) {
      continue;
    }
    const bool on_device = r.kind == acActivityKindKernel || r.kind == acActivityKindMemcpy ||
                           r.kind == acActivityKindMemset;
    ActivityType type = ActivityType::PRIVATEUSE1_RUNTIME;
    std::string name = r.name != nullptr ? r.name : "";
    if (r.kind == acActivityKindKernel) {
      type = ActivityType::CONCURRENT_KERNEL;
    } else if (r.kind == acActivityKindMemcpy) {
      type = ActivityType::GPU_MEMCPY;
      name = copy_name(r.copyKind);
    } else if (r.kind == acActivityKindMemset) {
      type = ActivityType::GPU_MEMSET;
      name = "Memset (accinte)";
    }
    buffer_->emplace_activity(buffer_->span, type, name);
    libkineto::GenericTraceActivity& a = *buffer_->activities.back();
    a.startTime = static_cast<int64_t>(r.start);
    a.endTime = static_cast<int64_t>(r.end);
    a.id = static_cast<int32_t>(r.correlationId);
    if (const auto it = external.find(r.correlationId); it != external.end()) {
      a.linked = get_linked(static_cast<int32_t>(it->second));
    }
    a.addMetadata("correlation", r.correlationId);
    if (on_device) {
      const int32_t row = rows.row(r.device, r.stream);
      a.device = r.device;
      a.resource = row;
      a.threadId = row;
      a.flow.id = static_cast<uint32_t>(r.correlationId);
      a.flow.type = libkineto::kLinkAsyncCpuGpu;
      a.flow.start = 0;
      a.addMetadata("device", r.device);
      a.addMetadata("stream", row);
      if (r.kind != acActivityKindKernel) {
        a.addMetadata("bytes", r.bytes);
        const double seconds = static_cast<double>(r.end - r.start) / 1e9;
        if (seconds > 0) {
          a.addMetadata("memory bandwidth (GB/s)", static_cast<double>(r.bytes) / seconds / 1e9);
        }
      }
      devices_.insert(r.device);
      streams_seen.emplace(r.device, row);
      ++buffer_->gpuOpCount;
    } else {
      a.device = pid;
      a.resource = static_cast<int32_t>(r.threadId);
      a.threadId = static_cast<int32_t>(r.threadId);
      if (launched.count(r.correlationId)) {
        a.flow.id = static_cast<uint32_t>(r.correlationId);
        a.flow.type = libkineto::kLinkAsyncCpuGpu;
        a.flow.start = 1;
      }
    }
    logger.handleActivity(a);
  }

  for (const int device : devices_) {
    if (device != *devices_.begin()) {
      logger.handleDeviceInfo(device_info(device), start_time);
    }
  }
  for (const auto& [device, row] : streams_seen) {
    const std::string label = row == 0 ? "stream 0 (default)" : "stream " + std::to_string(row);
    resources_.push_back(libkineto::ResourceInfo{row, row, device, label});
  }
}
// LITERALINCLUDE END: PROFILER PROCESS TRACE

std::string AccInteActivityProfilerSession::getDeviceProperties() {
  std::string json;
  for (DeviceIndex d = 0; d < device_count(); ++d) {
    const acDeviceProp prop = get_device_properties(d);
    char entry[512];
    std::snprintf(entry, sizeof entry,
                  "%s{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %zu, \"computeMajor\": "
                  "%d, \"computeMinor\": %d, \"numSms\": %d}",
                  d == 0 ? "" : ", ", static_cast<int>(d), prop.name, prop.totalGlobalMem,
                  prop.major, prop.minor, prop.multiProcessorCount);
    json += entry;
  }
  return json;
}

} // namespace

const std::string& AccInteActivityProfiler::name() const {
  static const std::string name = "accinte";
  return name;
}

const std::set<ActivityType>& AccInteActivityProfiler::availableActivities() const {
  static const std::set<ActivityType> types = {
      ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET,
      ActivityType::PRIVATEUSE1_RUNTIME};
  return types;
}

std::unique_ptr<libkineto::IActivityProfilerSession> AccInteActivityProfiler::configure(
    const std::set<ActivityType>& activity_types, const libkineto::Config& /*config*/) {
  auto kinds = requested_kinds(activity_types);
  if (kinds.empty()) {
    return nullptr;
  }
  return std::make_unique<AccInteActivityProfilerSession>(std::move(kinds));
}

std::unique_ptr<libkineto::IActivityProfilerSession> AccInteActivityProfiler::configure(
    int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
    const libkineto::Config& config) {
  return configure(activity_types, config);
}

// LITERALINCLUDE START: PROFILER REGISTRATION
// Runs when libtorch_accinte loads; Kineto receives the factory when a
// profiler first prepares a trace. (The macro lacks its own semicolon.)
REGISTER_PRIVATEUSE1_PROFILER(AccInteActivityProfiler);
// LITERALINCLUDE END: PROFILER REGISTRATION

} // namespace c10::accinte

#endif // USE_KINETO
