// AccInteTimer: DDP's timer for accinte (c10d::Timer, reducer_timer.hpp).
//
// DistributedDataParallel's reducer asks TimerRegistry for a timer of its
// parameters' device type; without one it warns "Time stats are currently
// only collected for CPU and CUDA devices" and logs no device timings. This
// one times the reducer's events on the device, as CUDA's timer does: each
// event is recorded on the current stream of the module's device, and a
// difference waits for both and asks the runtime for the time between them.

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteHostWait.h>

#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>

namespace c10d::accinte {
namespace {

// LITERALINCLUDE START: ACCL DDP TIMER
class AccInteTimer final : public c10d::Timer {
 public:
  explicit AccInteTimer(c10::Device device) : device_(device.index()) {}

  void record(Event event) override {
    Timer::record(event); // the host timestamp, which the reducer also reads
    events_[index(event)] = c10::accinte::AccInteEvent(/*enable_timing=*/true);
    events_[index(event)].record(c10::accinte::getCurrentAccInteStream(device_));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    const auto& from = events_[index(start)];
    const auto& to = events_[index(end)];
    if (!from.is_created() || !to.is_created()) {
      return std::nullopt;
    }
    {
      c10::accinte::HostWaitGuard no_gil;
      from.synchronize();
      to.synchronize();
    }
    float ms = 0;
    if (acEventElapsedTime(&ms, from.event(), to.event()) != acSuccess || ms < 0) {
      return std::nullopt; // as CUDA's timer: an unusable pair gives no figure
    }
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

 private:
  static size_t index(Event event) { return static_cast<size_t>(event); }

  c10::DeviceIndex device_;
  std::array<c10::accinte::AccInteEvent, 5> events_; // one per Timer::Event
};

C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, AccInteTimer);
// LITERALINCLUDE END: ACCL DDP TIMER

} // namespace
} // namespace c10d::accinte
