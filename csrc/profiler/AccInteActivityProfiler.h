#pragma once
// The Kineto activity profiler of accinte: a child profiler that PyTorch's
// Kineto runs next to its CPU tracing (PrivateUse1ProfilerRegistry), turning
// libaccinte's activity records into kernel, memcpy, memset and runtime
// activities. Compiled only when torch ships Kineto (USE_KINETO).
//
// Note [accinte profiler]
// How a trace flows, with CUDA's counterpart in brackets:
//   configure   Kineto asks for activity types. Only the kinds asked for are
//               enabled in the runtime, and none at all unless a device kind
//               (kernel, memcpy, memset) is asked for: a CPU-only trace then
//               gets no session and costs what it costs without accinte.
//   push/pop    once per CPU operator, its id goes on the launching thread's
//               external id stack (cuptiActivityPushExternalCorrelationId).
//   start/stop  enable / disable the kinds; stop waits for records in flight.
//   processTrace  reads the records (cuptiActivityGetNextRecord): device
//               records become activities on pid = device index, tid = stream
//               id, linked to the CPU operator through the external id ("External
//               id" in the trace) and ending a flow ("ac2g") that starts at the
//               runtime call which launched them (on the host thread).
// Activities live in the CpuTraceBuffer handed to Kineto by getTraceBuffer():
// PyTorch reads them after the session is gone. Times are the records' own,
// CLOCK_REALTIME nanoseconds, the clock of c10::getTime().

#ifdef USE_KINETO

#include <IActivityProfiler.h>

#include <set>
#include <string>

namespace c10::accinte {

class AccInteActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override;
  const std::set<libkineto::ActivityType>& availableActivities() const override;
  /// A session when a device kind is requested, nullptr otherwise.
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override;
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t ts_ms, int64_t duration_ms,
      const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override;
};

} // namespace c10::accinte

#endif // USE_KINETO
