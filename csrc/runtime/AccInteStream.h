#pragma once
// AccInteStream: a c10::Stream of device type PrivateUse1 together with its
// runtime handle (acStream_t), plus the per-thread "current stream" and the
// stream pools. Modelled on c10/cuda/CUDAStream.h.
//
// See Note [accinte stream ids]: a StreamId names one of a fixed set of
// streams per device, so a stream can cross into Python and back as three
// integers (id, device index, device type) and be resolved again here.

#include <accinte/accinte.h>
#include <c10/core/Stream.h>

#include <functional>
#include <optional>
#include <ostream>

namespace c10::accinte {

// Note [accinte stream ids]
// Each device has 1 default stream and two pools of kStreamsPerPool streams
// (low and high priority). The first use of any stream of a device creates
// all of them as runtime streams; each one's worker thread starts only when
// work is first queued on it (libaccinte). Ids:
//   0                                   the default stream
//   1 .. kStreamsPerPool                the low-priority pool (priority 0)
//   kStreamsPerPool+1 .. 2*kStreamsPerPool   the high-priority pool (priority -1)
// getStreamFromPool hands pool streams out round-robin, like CUDA's.
constexpr int kStreamsPerPool = 32;

class C10_EXPORT AccInteStream {
 public:
  /// Wraps a c10::Stream; throws unless it names an accinte stream.
  explicit AccInteStream(Stream stream);

  /// The runtime handle; creates the underlying runtime stream on first use.
  acStream_t stream() const;
  operator acStream_t() const { return stream(); }

  Stream unwrap() const { return stream_; }
  operator Stream() const { return stream_; }
  DeviceIndex device_index() const { return stream_.device_index(); }
  Device device() const { return stream_.device(); }
  StreamId id() const { return stream_.id(); }
  /// 0 (normal) or -1 (high); lower numbers are more urgent, as in CUDA.
  int priority() const;

  /// True when all work queued so far has finished (acStreamQuery).
  bool query() const;
  /// Blocks until all work queued so far has finished; rethrows a kernel
  /// failure reported by the runtime.
  void synchronize() const;

  bool operator==(const AccInteStream& other) const { return stream_ == other.stream_; }
  bool operator!=(const AccInteStream& other) const { return !(*this == other); }

 private:
  friend class AccInteStreamMaker;
  struct Unchecked {};
  // For ids that AccInteStream.cpp computed itself (AccInteStreamMaker):
  // the public constructor's checks would only repeat what holds.
  AccInteStream(Unchecked, Stream stream) : stream_(stream) {}

  Stream stream_;
};

/// A stream from the pool of `device` (-1: current device), round-robin.
C10_EXPORT AccInteStream getStreamFromPool(bool isHighPriority = false, DeviceIndex device = -1);
/// Same, choosing the pool by priority: values < 0 take the high-priority pool.
C10_EXPORT AccInteStream getStreamFromPool(int priority, DeviceIndex device);
/// The default stream of `device` (-1: current device).
C10_EXPORT AccInteStream getDefaultAccInteStream(DeviceIndex device = -1);
/// This thread's current stream on `device` (-1: current device); the default
/// stream until setCurrentAccInteStream says otherwise.
C10_EXPORT AccInteStream getCurrentAccInteStream(DeviceIndex device = -1);
/// Makes `stream` this thread's current stream on its device. Does not change
/// the current device.
C10_EXPORT void setCurrentAccInteStream(AccInteStream stream);
/// The stream whose runtime handle is `handle` (as AccInteStream::stream()
/// returns it, say through Inductor's get_raw_stream). Throws c10::Error for a
/// handle that is none of this process's default or pool streams.
C10_EXPORT AccInteStream getStreamFromHandle(acStream_t handle);

/// The id of the stream of `device` whose runtime handle is `handle` (NULL:
/// the default stream); nullopt for a runtime stream made outside the pools.
/// Used to name the streams of the runtime's activity records.
C10_EXPORT std::optional<StreamId> stream_id_of(DeviceIndex device, acStream_t handle);

C10_EXPORT std::ostream& operator<<(std::ostream& out, const AccInteStream& stream);

} // namespace c10::accinte

template <>
struct std::hash<c10::accinte::AccInteStream> {
  size_t operator()(const c10::accinte::AccInteStream& s) const noexcept {
    return std::hash<c10::Stream>{}(s.unwrap());
  }
};
