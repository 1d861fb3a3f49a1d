#include <csrc/distributed/ProcessGroupACCL.h>

#include <csrc/distributed/Agreement.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <ATen/core/jit_type.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>

namespace c10d::accinte {

using c10::accinte::AccInteEvent;
using c10::accinte::AccInteStream;

struct ProcessGroupACCL::Shared {
  std::unique_ptr<CollectiveEngine> engine;
  int rank = 0;
  int size = 1;
  bool check_agreement = true; // ACCL_AGREEMENT_CHECK=0 at creation turns it off
  std::atomic<bool> aborted{false};
  std::atomic<bool> shut_down{false};
  CollectiveStatus broken; // the first failed collective (Note [accl errors])
};

namespace {

// LITERALINCLUDE START: ACCL REFUSE CAPTURE
// A replayed graph would re-issue the engine's operation outside the order
// the ranks agreed on: refused, and the capture is invalidated (capture_end
// names the collective), as any call that cannot be captured.
void refuse_capture(const AccInteStream& current, const char* name) {
  if (!c10::accinte::is_stream_capturing(current)) {
    return;
  }
  c10::accinte::invalidate_capture(current, name);
  TORCH_CHECK(false, "accl: ", name, " was called while ", current, " captures a graph: "
              "torch.distributed collectives on accinte cannot be captured (a replay would "
              "run the collective outside the order the ranks agree on). Run it outside the "
              "captured region; the capture is invalidated, the process group is unaffected.");
}
// LITERALINCLUDE END: ACCL REFUSE CAPTURE

} // namespace

ProcessGroupACCL::ProcessGroupACCL(int rank, int size, std::unique_ptr<CollectiveEngine> engine,
                                   std::chrono::milliseconds timeout)
    : Backend(rank, size), shared_(std::make_shared<Shared>()), timeout_(timeout) {
  TORCH_CHECK(engine != nullptr, "accl: ProcessGroupACCL needs a collective engine");
  shared_->engine = std::move(engine);
  shared_->rank = rank;
  shared_->size = size;
  const char* check = std::getenv("ACCL_AGREEMENT_CHECK");
  shared_->check_agreement = check == nullptr || std::string(check) != "0";
  init();
}

ProcessGroupACCL::~ProcessGroupACCL() = default;

std::string ProcessGroupACCL::engine_name() const {
  return shared_->engine->name();
}

void ProcessGroupACCL::check_usable(const char* name) const {
  if (shared_->broken.failed()) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("accl: ", name, " refused: this process group broke when an "
                             "earlier collective failed (", shared_->broken.message(), "). "
                             "Destroy it (dist.destroy_process_group) and create a new one."));
  }
  TORCH_CHECK(!shared_->aborted.load(), "accl: ", name, " refused: the process group was aborted");
  TORCH_CHECK(!shared_->shut_down.load(), "accl: ", name,
              " refused: the process group was shut down (destroy_process_group)");
}

namespace {

/// The Python spelling of the reductions check_reduce_op refuses on some dtypes.
const char* op_name(const ReduceOp& op) {
  switch (op.op_) {
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
    case ReduceOp::BAND: return "BAND";
    case ReduceOp::BOR: return "BOR";
    case ReduceOp::BXOR: return "BXOR";
    default: return "?";
  }
}

} // namespace

void ProcessGroupACCL::check_reduce_op(const char* name, const ReduceOp& op,
                                       const at::Tensor& t, bool premul_sum) const {
  TORCH_CHECK(op != ReduceOp::UNUSED && (premul_sum || op != ReduceOp::PREMUL_SUM), "accl: ",
              name, ": this reduction is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, "
              "BXOR are; PREMUL_SUM too for all_reduce and reduce_scatter)");
  const bool floating = !t.defined() || at::isFloatingType(t.scalar_type());
  TORCH_CHECK(op != ReduceOp::AVG || floating, "accl: ", name,
              ": ReduceOp.AVG needs a floating-point tensor, got ", t.scalar_type());
  TORCH_CHECK(op != ReduceOp::PREMUL_SUM || floating, "accl: ", name,
              ": ReduceOp.PREMUL_SUM needs a floating-point tensor, got ", t.scalar_type());
  const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
  TORCH_CHECK(!bitwise || !t.defined() || at::isIntegralType(t.scalar_type(), /*includeBool=*/true),
              "accl: ", name, ": ReduceOp.", op_name(op), " needs an integer or bool tensor, got ",
              t.scalar_type());
  const bool ordered = op == ReduceOp::MIN || op == ReduceOp::MAX;
  TORCH_CHECK(!ordered || !t.defined() || !at::isComplexType(t.scalar_type()), "accl: ", name,
              ": ReduceOp.", op_name(op), " is not defined on complex tensors, got ",
              t.scalar_type());
}


// LITERALINCLUDE START: ACCL CHECK TENSORS
c10::DeviceIndex ProcessGroupACCL::check_tensors(const char* name,
                                                 const std::vector<at::Tensor>& tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<c10::DeviceIndex> device = device_;
  if (!device && getBoundDeviceId()) {
    device = getBoundDeviceId()->index();
  }
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.defined(), "accl: ", name, " got an undefined tensor");
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "accl: ", name,
                " takes accinte tensors, got one on ", t.device(), " (a group made with "
                "backend=\"cpu:gloo,accinte:accl\" serves both)");
    TORCH_CHECK(t.layout() == c10::kStrided, "accl: ", name,
                " takes dense tensors, got layout ", t.layout());
    TORCH_CHECK(t.is_contiguous(), "accl: ", name, ": tensors must be contiguous, got sizes ",
                t.sizes(), " and strides ", t.strides(), " (call .contiguous() first)");
    TORCH_CHECK(shared_->engine->supports(t.scalar_type()), "accl: ", name, ": dtype ",
                t.scalar_type(), " is not supported by the ", shared_->engine->name(),
                " engine");
    if (!device) {
      device = t.device().index();
    }
    TORCH_CHECK(t.device().index() == *device, "accl: ", name, ": this process group works on ",
                c10::Device(c10::DeviceType::PrivateUse1, *device), ", got a tensor on ",
                t.device(), " (one device per process and group, as with NCCL)");
  }
  if (!device) {
    device = c10::accinte::getCurrentAccInteStream().device_index();
  }
  device_ = device;
  return *device;
}
// LITERALINCLUDE END: ACCL CHECK TENSORS

AccInteStream ProcessGroupACCL::comm_stream(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!comm_) {
    comm_ = c10::accinte::getStreamFromPool(/*isHighPriority=*/true, device);
  }
  return *comm_;
}

c10::DeviceIndex ProcessGroupACCL::check_call(const char* name,
                                              const std::vector<at::Tensor>& tensors) {
  check_usable(name);
  const c10::DeviceIndex device = check_tensors(name, tensors);
  refuse_capture(c10::accinte::getCurrentAccInteStream(device), name);
  return device;
}

// LITERALINCLUDE START: ACCL COLLECTIVE KERNEL
class ProcessGroupACCL::CollectiveKernel {
 public:
  CollectiveKernel(std::shared_ptr<Shared> shared, std::vector<Launch> launches,
                   std::shared_ptr<CollectiveStatus> status, const char* name, OpType type,
                   std::optional<Fingerprint> fingerprint)
      : shared_(std::move(shared)), launches_(std::move(launches)), status_(std::move(status)),
        name_(name), any_source_(type == OpType::RECVANYSOURCE), fingerprint_(fingerprint) {}

  // On the communication stream's worker: fails the stream (and the group)
  // with a message that names the collective, the rank and the engine.
  void operator()() {
    if (shared_->aborted.load()) {
      status_->fail(c10::str("accl: ", name_, " did not run: the process group was aborted"));
      throw std::runtime_error(status_->message());
    }
    std::string cause;
    try {
      run();
      return;
    } catch (const std::exception& e) {
      cause = e.what();
    } catch (...) {
      cause = "an exception that is not a std::exception";
    }
    const std::string message = c10::str("accl: ", name_, " failed on rank ", shared_->rank,
                                         " (", shared_->engine->name(), "): ", cause);
    status_->fail(message);
    shared_->broken.fail(message);
    throw std::runtime_error(message);
  }

 private:
  // Starts every launch in order and waits for every started operation, even
  // after a failure (the engine may use the aliases until then); rethrows the
  // first failure.
  void run() {
    // Note [accl ranks agree before they move data]
    if (fingerprint_ && shared_->size > 1 && shared_->check_agreement) {
      check_agreement(*shared_->engine, shared_->size, *fingerprint_);
    }
    std::vector<EngineOp> started;
    started.reserve(launches_.size());
    std::exception_ptr first_error;
    try {
      for (const Launch& launch : launches_) {
        if (EngineOp op = launch(*shared_->engine)) {
          started.push_back(std::move(op));
        }
      }
    } catch (...) {
      first_error = std::current_exception();
    }
    for (const EngineOp& op : started) {
      try {
        op->wait();
      } catch (...) {
        if (!first_error) {
          first_error = std::current_exception();
        }
      }
    }
    if (first_error) {
      std::rethrow_exception(first_error);
    }
    if (any_source_) {
      // A Launch may return nullptr (finished at once): then no handle tells
      // the source, and the receive fails rather than guess it.
      TORCH_CHECK(!started.empty(), "the engine finished the receive without a handle that "
                  "names its source rank");
      status_->source_rank.store(started.front()->sourceRank());
    }
  }

  std::shared_ptr<Shared> shared_;
  std::vector<Launch> launches_;
  std::shared_ptr<CollectiveStatus> status_;
  const char* name_; // an operation's name, a string literal
  bool any_source_;
  std::optional<Fingerprint> fingerprint_;
};
// LITERALINCLUDE END: ACCL COLLECTIVE KERNEL

// LITERALINCLUDE START: ACCL ENQUEUE
c10::intrusive_ptr<Work> ProcessGroupACCL::enqueue(OpType type, const char* name,
                                                   std::vector<at::Tensor> tensors,
                                                   std::vector<at::Tensor> outputs,
                                                   std::vector<Launch> launches, bool blocking) {
  const c10::DeviceIndex device = check_call(name, tensors);
  const AccInteStream current = c10::accinte::getCurrentAccInteStream(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (coalescing_) { // Note [accl coalescing]
      pending_.push_back({std::move(tensors), std::move(outputs), std::move(launches)});
      return nullptr;
    }
  }
  const AccInteStream comm = comm_stream(device);

  // The collective sees everything queued on the caller's stream so far.
  AccInteEvent ready;
  ready.record(current);
  ready.block(comm);
  // Its memory is not handed out again before the collective ended.
  c10::DeviceAllocator* allocator =
      c10::getDeviceAllocator(c10::DeviceType::PrivateUse1);
  for (const at::Tensor& t : tensors) {
    if (t.has_storage()) {
      allocator->recordStream(t.storage().data_ptr(), comm);
    }
  }

  auto status = std::make_shared<CollectiveStatus>();
  // A CPU kernel: PREMUL_SUM scales with CPU operators, and a shm reduction
  // runs on the CPU (launch_cpu_kernel: Note [accinte one kernel scope]).
  at::native::accinte::launch_cpu_kernel(
      comm,
      CollectiveKernel(shared_, std::move(launches), status, name, type,
                       fingerprint_of(type, tensors)),
      name);

  auto end = std::make_shared<AccInteEvent>();
  end->record(comm);
  const c10::Device where(c10::DeviceType::PrivateUse1, device);
  auto future = c10::make_intrusive<c10::ivalue::Future>(
      c10::ListType::create(c10::TensorType::get()), std::vector<c10::Device>{where});
  {
    // The Future's events are recorded on the current stream: make it comm.
    c10::StreamGuard on_comm(comm.unwrap());
    future->markCompleted(c10::IValue(outputs));
  }
  // Work.wait(timeout) giving up fails the group as a failed collective does,
  // and aborts it, so destroying it does not wait for the stalled kernel.
  auto on_timeout = [shared = shared_](const std::string& message) {
    shared->broken.fail(message);
    shared->aborted.store(true);
    shared->engine->abort(); // the stalled kernel ends, and the stream behind it runs
  };
  return c10::make_intrusive<WorkACCL>(rank_, type, name, device, std::move(outputs),
                                       std::move(future), std::move(end), std::move(status),
                                       blocking, std::move(on_timeout));
}
// LITERALINCLUDE END: ACCL ENQUEUE

void ProcessGroupACCL::startCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "accl: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  pending_.clear();
}

c10::intrusive_ptr<Work> ProcessGroupACCL::endCoalescing() {
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(coalescing_, "accl: endCoalescing called without startCoalescing");
    coalescing_ = false;
    pending.swap(pending_);
  }
  std::vector<at::Tensor> tensors, outputs;
  std::vector<Launch> launches;
  for (Pending& p : pending) {
    tensors.insert(tensors.end(), p.tensors.begin(), p.tensors.end());
    outputs.insert(outputs.end(), p.outputs.begin(), p.outputs.end());
    launches.insert(launches.end(), p.launches.begin(), p.launches.end());
  }
  return enqueue(OpType::COALESCED, "accl::coalesced", std::move(tensors), std::move(outputs),
                 std::move(launches));
}

// ---- life cycle -------------------------------------------------------------------

void ProcessGroupACCL::abort() {
  shared_->aborted.store(true);
  shared_->engine->abort();
}

void ProcessGroupACCL::shutdown() {
  std::optional<AccInteStream> comm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    comm = comm_;
  }
  if (comm && !shared_->aborted.load()) {
    try {
      c10::accinte::HostWaitGuard no_gil;
      comm->synchronize();
    } catch (const c10::Error& e) {
      TORCH_WARN("accl: a collective failed before the process group was shut down: ",
                 e.what_without_backtrace());
    }
  }
  shared_->shut_down.store(true);
}

c10::intrusive_ptr<Backend::Options> ProcessGroupACCL::getBackendOptions() {
  return c10::make_intrusive<Backend::Options>("accl", timeout_);
}

} // namespace c10d::accinte
