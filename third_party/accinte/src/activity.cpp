// activity.cpp: activity records (acActivity*): which kinds are enabled, the
// per-thread external correlation ids, the record store, and the RAII scopes
// that stamp records. See Note [accinte activity records] in accinte.h.
#include "activity.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace accinte {

std::atomic<uint32_t> gActivityKinds{0};

namespace {

std::atomic<uint64_t> gNextCorrelation{1};

// The stored records, and the device work in flight that will add one.
struct RecordStore {
  std::mutex mutex;
  std::condition_variable settled;  // inFlight dropped to 0
  std::deque<acActivityRecord> records;
  size_t inFlight = 0;
  // Kernel names, copied once: a record outlives the string given at launch.
  std::unordered_set<std::string> names;
};

RecordStore& store() {
  static auto* s = new RecordStore();  // never destroyed: see runtime.h
  return *s;
}

thread_local std::vector<uint64_t> tExternalIds;

uint64_t now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t threadId() {
  static thread_local const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

bool isRecordedKind(int kind) {
  return kind >= acActivityKindKernel && kind <= acActivityKindSynchronization;
}

// Stores `record`; with `settling`, also retires one piece of work in flight.
void store(const acActivityRecord& record, bool settling) {
  RecordStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  acActivityRecord& stored = s.records.emplace_back(record);
  if (record.kind == acActivityKindKernel) {
    stored.name = s.names.emplace(record.name != nullptr ? record.name : "kernel").first->c_str();
  }
  if (settling && --s.inFlight == 0) {
    s.settled.notify_all();
  }
}

}  // namespace

// ---- RuntimeActivity ----------------------------------------------------------

RuntimeActivity::RuntimeActivity(const char* api, acActivityKind kind) : api_(api), kind_(kind) {
  if (__builtin_expect(enabledActivityKinds() != 0, 0)) {
    correlation_ = gNextCorrelation.fetch_add(1, std::memory_order_relaxed);
    start_ = now();
  }
}

RuntimeActivity::~RuntimeActivity() {
  if (correlation_ == 0) {
    return;
  }
  const uint32_t kinds = enabledActivityKinds();
  if (isActivityEnabled(kinds, kind_)) {
    acActivityRecord record{};
    record.kind = kind_;
    record.device = -1;
    record.start = start_;
    record.end = now();
    record.correlationId = correlation_;
    record.threadId = threadId();
    record.name = api_;
    store(record, /*settling=*/false);
  }
  if (!tExternalIds.empty()) {
    acActivityRecord link{};
    link.kind = acActivityKindExternalCorrelation;
    link.device = -1;
    link.correlationId = correlation_;
    link.externalId = tExternalIds.back();
    store(link, /*settling=*/false);
  }
}

// ---- DeviceActivity -----------------------------------------------------------

// LITERALINCLUDE START: PROFILER DEVICE ACTIVITY
DeviceActivity::DeviceActivity(acActivityKind kind, uint64_t correlation, int device,
                               const char* name, size_t bytes, acMemcpyKind copyKind) {
  if (__builtin_expect(!isActivityEnabled(enabledActivityKinds(), kind), 1)) {
    return;
  }
  record_.kind = kind;
  record_.device = device;
  (void)workerStreamOf(&record_.stream, &record_.device);
  record_.correlationId = correlation;
  record_.bytes = bytes;
  record_.copyKind = copyKind;
  record_.name = name;
  {
    RecordStore& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.inFlight;
  }
  recording_ = true;
  record_.start = now();
}

DeviceActivity::~DeviceActivity() {
  if (recording_) {
    record_.end = now();
    store(record_, /*settling=*/true);
  }
}
// LITERALINCLUDE END: PROFILER DEVICE ACTIVITY

}  // namespace accinte

using namespace accinte;

extern "C" {

acError_t acActivityEnable(acActivityKind kind) {
  if (!isRecordedKind(kind)) {
    return acErrorInvalidValue;
  }
  gActivityKinds.fetch_or(1u << kind, std::memory_order_relaxed);
  return acSuccess;
}

acError_t acActivityDisable(acActivityKind kind) {
  if (!isRecordedKind(kind)) {
    return acErrorInvalidValue;
  }
  gActivityKinds.fetch_and(~(1u << kind), std::memory_order_relaxed);
  return acSuccess;
}

acError_t acActivityPushExternalCorrelationId(uint64_t id) {
  return apiCall([&] {
    tExternalIds.push_back(id);
    return acSuccess;
  });
}

acError_t acActivityPopExternalCorrelationId(uint64_t* id) {
  return apiCall([&] {
    if (tExternalIds.empty()) {
      return acErrorInvalidValue;
    }
    if (id != nullptr) {
      *id = tExternalIds.back();
    }
    tExternalIds.pop_back();
    return acSuccess;
  });
}

acError_t acActivityFlushAll(void) {
  return blockingApiCall([] {
    RecordStore& s = store();
    std::unique_lock<std::mutex> lock(s.mutex);
    s.settled.wait(lock, [&] { return s.inFlight == 0; });
    return acSuccess;
  });
}

acError_t acActivityGetRecords(acActivityRecord* records, size_t capacity, size_t* count) {
  return apiCall([&] {
    if (count == nullptr || (records == nullptr && capacity != 0)) {
      return acErrorInvalidValue;
    }
    RecordStore& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t n = 0;
    while (n < capacity && !s.records.empty()) {
      records[n++] = s.records.front();
      s.records.pop_front();
    }
    *count = n;
    return acSuccess;
  });
}

acError_t acActivityClear(void) {
  return apiCall([] {
    RecordStore& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.records.clear();
    return acSuccess;
  });
}

acError_t acActivityGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) {
    return acErrorInvalidValue;
  }
  *timestamp = now();
  return acSuccess;
}

}  // extern "C"
