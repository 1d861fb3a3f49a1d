#include <csrc/distributed/WorkACCL.h>

#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <c10/util/Exception.h>

#include <thread>

namespace c10d::accinte {

void CollectiveStatus::fail(std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_.load(std::memory_order_relaxed)) {
    message_ = std::move(message);
    failed_.store(true, std::memory_order_release);
  }
}

std::string CollectiveStatus::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

WorkACCL::WorkACCL(int rank, OpType type, const char* profiling_title, c10::DeviceIndex device,
                   std::vector<at::Tensor> outputs,
                   c10::intrusive_ptr<c10::ivalue::Future> future,
                   std::shared_ptr<c10::accinte::AccInteEvent> end,
                   std::shared_ptr<CollectiveStatus> status, bool blocking,
                   OnTimeout on_timeout)
    : Work(rank, type, profiling_title),
      name_(profiling_title),
      device_(device),
      outputs_(std::move(outputs)),
      future_(std::move(future)),
      end_(std::move(end)),
      status_(std::move(status)),
      blocking_(blocking),
      queued_(std::chrono::steady_clock::now()),
      on_timeout_(std::move(on_timeout)) {}

bool WorkACCL::isCompleted() {
  return end_->query();
}

bool WorkACCL::isSuccess() const {
  return end_->query() && !status_->failed();
}

std::exception_ptr WorkACCL::exception() const {
  if (!status_->failed()) {
    return nullptr;
  }
  return std::make_exception_ptr(c10::DistBackendError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, status_->message()));
}

void WorkACCL::throw_if_failed() const {
  if (status_->failed()) {
    C10_THROW_ERROR(DistBackendError, status_->message());
  }
}

int WorkACCL::sourceRank() const {
  const_cast<WorkACCL*>(this)->synchronize();
  return status_->source_rank.load();
}

std::vector<at::Tensor> WorkACCL::result() {
  return outputs_;
}

void WorkACCL::synchronize() {
  try {
    c10::accinte::HostWaitGuard no_gil;
    end_->synchronize();
  } catch (const c10::Error&) {
    // The runtime reports the failed kernel too; the status says it better.
    throw_if_failed();
    throw;
  }
  throw_if_failed();
}

// LITERALINCLUDE START: ACCL WORK WAIT
void WorkACCL::order_current_stream() {
  // The current stream waits for the collective's end (a send's too, whose
  // Future holds no output of its own); the Future records the outputs on
  // it for the caching allocator.
  const auto stream = c10::accinte::getCurrentAccInteStream(device_);
  end_->block(stream);
  future_->wait();
  // Behind that wait, a check that turns a failed collective into a failure
  // of the current stream, reported at its next synchronisation.
  c10::accinte::launch_kernel(stream, [status = status_] {
    if (status->failed()) {
      throw std::runtime_error(status->message());
    }
  }, "accl::check_collective");
}

bool WorkACCL::wait(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() >= 0, "accl: ", name_, ": Work.wait(timeout) takes a timeout of "
              "0 or more (0 waits without one), got ", timeout.count(), " ms");
  throw_if_failed();
  if (!blocking_) {
    order_current_stream();
  }
  // As WorkNCCL::wait(timeout): with a timeout the host waits too, for at
  // most `timeout` from the moment the collective was queued.
  // A timeout past the clock's range (timedelta.max) is no timeout, not an overflow.
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::time_point::max() - queued_);
  const auto deadline = timeout < room ? queued_ + timeout
                                       : std::chrono::steady_clock::time_point::max();
  if (timeout != kNoTimeout && !host_wait_until(deadline)) {
    give_up(timeout);
  }
  if (blocking_) {
    synchronize(); // a barrier: the host waits (at once if it ended above)
  } else if (timeout != kNoTimeout) {
    throw_if_failed();
  }
  return true;
}
// LITERALINCLUDE END: ACCL WORK WAIT

void WorkACCL::give_up(std::chrono::milliseconds timeout) {
  const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - queued_);
  const std::string message = c10::str(
      "accl: ", name_, " on rank ", rank_, " timed out in Work.wait(timeout=", timeout.count(),
      " ms): it ran for ", ran.count(), " ms without finishing (a peer may be stalled or "
      "gone); the process group is aborted");
  status_->fail(message);
  if (on_timeout_) {
    on_timeout_(message);
  }
  // The Work's first failure: this one, unless the kernel failed meanwhile.
  C10_THROW_ERROR(DistBackendError, status_->message());
}

bool WorkACCL::host_wait_until(std::chrono::steady_clock::time_point deadline) const {
  c10::accinte::HostWaitGuard no_gil;
  // Polled, as WorkNCCL polls its end event: an event has no timed wait.
  while (!end_->query()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void WorkACCL::blockCurrentStream() {
  wait();
}

c10::intrusive_ptr<c10::ivalue::Future> WorkACCL::getFuture() {
  return future_;
}

} // namespace c10d::accinte
