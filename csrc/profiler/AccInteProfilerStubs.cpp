// The legacy profiler's device stubs for accinte: what
// torch.autograd.profiler.profile(use_device="accinte") calls around every
// operator (PyTorch's KINETO_PRIVATEUSE1_FALLBACK state). Without them the
// profiler reports "PrivateUse1 used in profiler but not enabled" per
// operator. Device time is the elapsed time between two events recorded on
// the current stream when the operator starts and ends, so it covers the
// kernels the operator queued, as CUDA's stubs do.
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

namespace c10::accinte {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

// LITERALINCLUDE START: PROFILER LEGACY STUBS
struct AccInteProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const DeviceIndex current = current_device();
    if (device != nullptr) {
      *device = current;
    }
    // PyTorch passes only the outputs it wants.
    acEvent_t raw = nullptr;
    if (event != nullptr) {
      ACCINTE_CHECK(acEventCreate(&raw));
      *event = std::shared_ptr<void>(raw, [](void* e) {
        ACCINTE_CHECK_WARN(acEventDestroy(static_cast<acEvent_t>(e)));
      });
    }
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
    if (raw != nullptr) {
      ACCINTE_CHECK(acEventRecord(raw, getCurrentAccInteStream(current).stream()));
    }
  }

  /// Microseconds between two records, once both have completed.
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    auto* from = static_cast<acEvent_t>(start->get());
    auto* to = static_cast<acEvent_t>(end->get());
    ACCINTE_CHECK(acEventSynchronize(from));
    ACCINTE_CHECK(acEventSynchronize(to));
    float ms = 0;
    ACCINTE_CHECK(acEventElapsedTime(&ms, from, to));
    return ms * 1000.0f;
  }

  // No annotation ranges on an emulated device (CUDA's are NVTX's).
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (DeviceIndex d = 0; d < device_count(); ++d) {
      const AccInteGuard guard(d);
      op(d);
    }
  }

  void synchronize() const override {
    for (DeviceIndex d = 0; d < device_count(); ++d) {
      if (has_primary_context(d)) {
        device_synchronize(d);
      }
    }
  }
};

// Registered when libtorch_accinte loads.
const bool g_registered = [] {
  static AccInteProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();
// LITERALINCLUDE END: PROFILER LEGACY STUBS

} // namespace
} // namespace c10::accinte
