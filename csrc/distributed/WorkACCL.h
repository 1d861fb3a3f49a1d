#pragma once
// WorkACCL: the c10d::Work of one accl collective (ProcessGroupACCL.h).
//
// Note [accl work and streams]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A collective is a kernel on the group's communication stream, queued after
// the caller's current stream; its Work is returned as soon as the kernel is
// queued. As with NCCL, finishing is a stream matter, not a host one:
//   - wait() makes the caller's *current stream* wait for the collective (an
//     event) and returns at once; reading the output on the host (.cpu(),
//     .item()) then waits as for any kernel. If the collective failed, a check
//     queued on the current stream behind that wait fails too, so the error
//     surfaces at the next synchronisation with the current stream.
//   - getFuture() is completed at once with the output tensors on accinte
//     (DDP reads them from it), its events recorded on the communication
//     stream: ivalue::Future::wait() and then() callbacks order the caller's
//     stream after the collective the same way.
//   - isCompleted() asks the end event, without blocking; synchronize()
//     blocks the host until the collective ended and throws if it failed.
//   - wait(timeout) with a timeout orders the current stream as wait() does,
//     then also blocks the host, as WorkNCCL::wait(timeout) does, until the
//     collective ended or `timeout` has passed since it was queued. If time
//     runs out first, the collective is taken as failed (Note [accl errors]):
//     the group is aborted and broken, and wait() throws DistBackendError.
// A barrier is the exception: its wait() blocks the host, as dist.barrier()
// promises (NCCL's barrier does the same).

#include <csrc/runtime/AccInteEvent.h>
#include <csrc/runtime/AccInteStream.h>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace c10d::accinte {

/// What the kernel of one collective reports back to the host: written by
/// the thread running the communication stream's work (its worker or a
/// waiting host), read by any thread.
class CollectiveStatus {
 public:
  /// Records the failure (the first one is kept).
  void fail(std::string message);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  /// The failure's message ("" while none).
  std::string message() const;
  /// For a receive from any rank: the sender, once the kernel has run.
  std::atomic<int> source_rank{-1};

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string message_; // guarded by mutex_
};

class WorkACCL final : public c10d::Work {
 public:
  /// Called (once, on the waiting thread) when wait(timeout) gives up on the
  /// collective, with the failure's message: the group aborts and breaks.
  using OnTimeout = std::function<void(const std::string& message)>;

  /// `end` is recorded on `comm` after the collective's kernel; `future` is
  /// already completed with `outputs`. `blocking` (barriers): wait() blocks
  /// the host. The collective counts as queued now (wait(timeout)'s clock).
  WorkACCL(int rank, OpType type, const char* profiling_title, c10::DeviceIndex device,
           std::vector<at::Tensor> outputs,
           c10::intrusive_ptr<c10::ivalue::Future> future,
           std::shared_ptr<c10::accinte::AccInteEvent> end,
           std::shared_ptr<CollectiveStatus> status, bool blocking, OnTimeout on_timeout);

  /// Non-blocking: true once the kernel has run (successfully or not).
  bool isCompleted() override;
  /// True unless the kernel failed (false also before it has run).
  bool isSuccess() const override;
  /// The failure as a c10::DistBackendError, or nullptr.
  std::exception_ptr exception() const override;
  /// For recv from any rank: blocks the host until the kernel has run, then
  /// returns the sender's rank.
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  /// Blocks the host until the collective ended; throws DistBackendError if it failed.
  void synchronize() override;
  /// Orders the current stream after the collective (Note [accl work and
  /// streams]). With a `timeout` (not kNoTimeout), also blocks the host until
  /// the collective ended or `timeout` has passed since it was queued; then
  /// throws DistBackendError if it failed or timed out (a time-out aborts and
  /// breaks the group, as NCCL aborts its communicator). Throws
  /// DistBackendError at once if the collective is known to have failed.
  /// Always returns true.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  /// Same as wait().
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  void throw_if_failed() const;
  /// wait()'s ordering of the current stream after the collective.
  void order_current_stream();
  /// Blocks the host until the end event completes or `deadline`; false on time-out.
  bool host_wait_until(std::chrono::steady_clock::time_point deadline) const;
  /// wait(timeout) ran out of time: fails the Work and the group, then throws.
  [[noreturn]] void give_up(std::chrono::milliseconds timeout);

  const char* const name_; // the collective's, for messages
  const c10::DeviceIndex device_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<c10::accinte::AccInteEvent> end_;
  std::shared_ptr<CollectiveStatus> status_;
  const bool blocking_;
  const std::chrono::steady_clock::time_point queued_;
  OnTimeout on_timeout_;
};

} // namespace c10d::accinte
