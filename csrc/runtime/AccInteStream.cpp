#include <csrc/runtime/AccInteStream.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {
namespace {

constexpr int kPriorityLevels = 2; // index 0: priority 0, index 1: priority -1
constexpr StreamId kMaxStreamId = kPriorityLevels * kStreamsPerPool;

// LITERALINCLUDE START: STREAM DEVICE STREAMS
// Runtime handles of one device's streams, created on first use.
struct DeviceStreams {
  std::once_flag created;
  // Set (release) once the handles below are in: from then on they are read
  // after one acquire load, without call_once (which costs a call and two
  // thread-local stores even when done, twice per .item()).
  std::atomic<bool> ready{false};
  acStream_t default_stream = nullptr;
  std::array<std::array<acStream_t, kStreamsPerPool>, kPriorityLevels> pool{};
  std::array<std::atomic<uint32_t>, kPriorityLevels> next{};
};

DeviceStreams& streams_of(DeviceIndex device) {
  // Leaked on purpose: streams may still be referenced by other static
  // destructors at exit, and the runtime owns their threads.
  static auto* all = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceStreams>>();
    for (DeviceIndex i = 0; i < device_count(); ++i) {
      v->push_back(std::make_unique<DeviceStreams>());
    }
    return v;
  }();
  check_device_index(device);
  DeviceStreams& s = *(*all)[device];
  if (C10_LIKELY(s.ready.load(std::memory_order_acquire))) {
    return s;
  }
  std::call_once(s.created, [&] {
    AccInteGuard guard(device);
    ACCINTE_CHECK(acDeviceGetDefaultStream(device, &s.default_stream));
    for (int level = 0; level < kPriorityLevels; ++level) {
      for (auto& handle : s.pool[level]) {
        ACCINTE_CHECK(acStreamCreateWithPriority(&handle, 0, -level));
      }
    }
    s.ready.store(true, std::memory_order_release);
  });
  return s;
}

// Current stream id per device for this thread; 0 (default) until set.
thread_local std::array<StreamId, ACCINTE_MAX_DEVICE_COUNT> t_current_stream{};
// LITERALINCLUDE END: STREAM DEVICE STREAMS

} // namespace

// Makes the streams this file names by (checked device, id it computed): the
// constructor's checks would only repeat what holds by construction.
class AccInteStreamMaker {
 public:
  static AccInteStream make(DeviceIndex device, StreamId id) {
    return AccInteStream(AccInteStream::Unchecked{},
                         Stream(Stream::UNSAFE, Device(DeviceType::PrivateUse1, device), id));
  }
};

namespace {

AccInteStream make_stream(DeviceIndex device, StreamId id) {
  return AccInteStreamMaker::make(device, id);
}

} // namespace

AccInteStream::AccInteStream(Stream stream) : stream_(stream) {
  TORCH_CHECK(stream.device_type() == DeviceType::PrivateUse1,
              "Expected an accinte stream, got a stream on ", stream.device());
  TORCH_CHECK(stream.id() >= 0 && stream.id() <= kMaxStreamId, "Invalid accinte stream id ",
              stream.id(), " (see Note [accinte stream ids])");
}

acStream_t AccInteStream::stream() const {
  DeviceStreams& s = streams_of(device_index());
  if (id() == 0) {
    return s.default_stream;
  }
  const auto index = id() - 1;
  return s.pool[index / kStreamsPerPool][index % kStreamsPerPool];
}

int AccInteStream::priority() const {
  return id() > kStreamsPerPool ? -1 : 0;
}

bool AccInteStream::query() const {
  return ACCINTE_QUERY(acStreamQuery(stream()));
}

// LITERALINCLUDE START: STREAM SYNCHRONIZE WITHOUT GIL
void AccInteStream::synchronize() const {
  {
    HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
    ACCINTE_CHECK(acStreamSynchronize(stream()));
  }
  release_finished_kernels();
}
// LITERALINCLUDE END: STREAM SYNCHRONIZE WITHOUT GIL

// LITERALINCLUDE START: STREAM POOL AND CURRENT
AccInteStream getStreamFromPool(bool isHighPriority, DeviceIndex device) {
  device = resolve_device_index(device);
  DeviceStreams& s = streams_of(device);
  const int level = isHighPriority ? 1 : 0;
  const auto index = s.next[level].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  mark_device_used(device);
  return make_stream(device, 1 + level * kStreamsPerPool + static_cast<StreamId>(index));
}

AccInteStream getStreamFromPool(int priority, DeviceIndex device) {
  return getStreamFromPool(priority < 0, device);
}

AccInteStream getDefaultAccInteStream(DeviceIndex device) {
  return make_stream(resolve_device_index(device), 0);
}

AccInteStream getCurrentAccInteStream(DeviceIndex device) {
  device = resolve_device_index(device);
  return make_stream(device, t_current_stream[device]);
}

void setCurrentAccInteStream(AccInteStream stream) {
  t_current_stream[stream.device_index()] = stream.id();
}
// LITERALINCLUDE END: STREAM POOL AND CURRENT

std::optional<StreamId> stream_id_of(DeviceIndex device, acStream_t handle) {
  const DeviceStreams& s = streams_of(device);
  if (handle == nullptr || handle == s.default_stream) {
    return 0;
  }
  for (int level = 0; level < kPriorityLevels; ++level) {
    for (int i = 0; i < kStreamsPerPool; ++i) {
      if (s.pool[level][i] == handle) {
        return static_cast<StreamId>(1 + level * kStreamsPerPool + i);
      }
    }
  }
  return std::nullopt;
}

AccInteStream getStreamFromHandle(acStream_t handle) {
  int device = -1;
  ACCINTE_CHECK(acStreamGetDevice(handle, &device));
  const auto index = static_cast<DeviceIndex>(device);
  const DeviceStreams& s = streams_of(index);
  if (handle == s.default_stream) {
    return make_stream(index, 0);
  }
  for (int level = 0; level < kPriorityLevels; ++level) {
    for (int i = 0; i < kStreamsPerPool; ++i) {
      if (s.pool[level][i] == handle) {
        return make_stream(index, 1 + level * kStreamsPerPool + static_cast<StreamId>(i));
      }
    }
  }
  TORCH_CHECK(false, "accinte stream handle ", handle, " is not a stream of device ", device);
}

std::ostream& operator<<(std::ostream& out, const AccInteStream& stream) {
  return out << stream.unwrap();
}

} // namespace c10::accinte
