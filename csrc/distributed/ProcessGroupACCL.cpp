#include <csrc/distributed/ProcessGroupACCL.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/runtime/AccInteGraph.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>

#include <ATen/core/jit_type.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <atomic>

namespace c10d::accinte {

using at::native::accinte::cpu_alias;
using c10::accinte::AccInteEvent;
using c10::accinte::AccInteStream;

struct ProcessGroupACCL::Shared {
  std::unique_ptr<CollectiveEngine> engine;
  int rank = 0;
  std::atomic<bool> aborted{false};
  std::atomic<bool> shut_down{false};
  CollectiveStatus broken; // the first failed collective (Note [accl errors])
};

namespace {

std::vector<at::Tensor> aliases_of(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> aliases;
  aliases.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    aliases.push_back(cpu_alias(t));
  }
  return aliases;
}

std::vector<std::vector<at::Tensor>> aliases_of(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<std::vector<at::Tensor>> aliases;
  aliases.reserve(lists.size());
  for (const auto& list : lists) {
    aliases.push_back(aliases_of(list));
  }
  return aliases;
}

template <typename... Lists>
std::vector<at::Tensor> concat(const Lists&... lists) {
  std::vector<at::Tensor> all;
  (all.insert(all.end(), lists.begin(), lists.end()), ...);
  return all;
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) {
    all.insert(all.end(), list.begin(), list.end());
  }
  return all;
}

// c10d passes one tensor per process (a list of one, from the multi-device days).
void check_single(const char* name, size_t count) {
  TORCH_CHECK(count == 1, "accl: ", name, " takes one tensor per process (lists of several "
              "devices' tensors are not supported), got ", count);
}

void check_same(const char* name, const at::Tensor& a, const at::Tensor& b, int64_t factor,
                const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "accl: ", name, ": ", what,
              " tensors must have one dtype, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel() * factor, "accl: ", name, ": the ", what, " tensor has ",
              a.numel(), " elements, expected ", b.numel() * factor);
}

// all_to_all_single's splits: empty (equal chunks of dimension 0) or one size
// per rank adding up to dimension 0.
void check_splits(const char* name, const at::Tensor& t, const std::vector<int64_t>& splits,
                  int size, const char* what) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "accl: ", name, ": the ", what, " tensor's first dimension (",
                rows, ") does not divide into ", size, " equal splits");
    return;
  }
  TORCH_CHECK(splits.size() == static_cast<size_t>(size), "accl: ", name, ": ", what,
              " splits need one size per rank (", size, "), got ", splits.size());
  int64_t total = 0;
  for (int64_t s : splits) {
    TORCH_CHECK(s >= 0, "accl: ", name, ": ", what, " split sizes must be >= 0, got ", s);
    total += s;
  }
  TORCH_CHECK(total == rows, "accl: ", name, ": ", what, " split sizes add up to ", total,
              ", but the ", what, " tensor's first dimension is ", rows);
}

// LITERALINCLUDE START: ACCL REFUSE CAPTURE
// A replayed graph would re-issue the engine's operation outside the order
// the ranks agreed on: refused, and the capture is invalidated (capture_end
// names the collective), as any call that cannot be captured.
void refuse_capture(const AccInteStream& current, const char* name) {
  if (!c10::accinte::is_stream_capturing(current)) {
    return;
  }
  c10::accinte::note_capture_invalidated(current, name);
  (void)acStreamSynchronize(current.stream()); // refused by the runtime: invalidates the capture
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
  init();
}

ProcessGroupACCL::~ProcessGroupACCL() = default;

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
}

namespace {

// Note [accl PREMUL_SUM]
// ~~~~~~~~~~~~~~~~~~~~~~
// NCCL's PREMUL_SUM (FSDP2 uses it for a custom gradient divide factor) is a
// SUM of the inputs each multiplied by a factor first. The engine only sums:
// the kernel scales a host copy of the input (or, for an in-place all_reduce,
// the buffer itself) and sums that. A factor given as a tensor is read at the
// call (a synchronisation if it lives on accinte).
std::optional<double> premul_factor(const ReduceOp& op) {
  if (op != ReduceOp::PREMUL_SUM) {
    return std::nullopt;
  }
  const auto* supplement = dynamic_cast<const PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "accl: ReduceOp.PREMUL_SUM without its factor");
  if (supplement->tensor_factor.defined()) {
    return supplement->tensor_factor.to(at::kCPU).item<double>();
  }
  return supplement->double_factor;
}

// The reduction the engine runs: SUM in place of PREMUL_SUM.
template <typename Options>
Options engine_options(Options opts, const std::optional<double>& factor) {
  if (factor) {
    opts.reduceOp = ReduceOp(ReduceOp::SUM);
  }
  return opts;
}

at::Tensor scaled(const at::Tensor& t, const std::optional<double>& factor) {
  return factor ? t.mul(*factor) : t;
}

} // namespace

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

// LITERALINCLUDE START: ACCL ENQUEUE
c10::intrusive_ptr<Work> ProcessGroupACCL::enqueue(OpType type, const char* name,
                                                   std::vector<at::Tensor> tensors,
                                                   std::vector<at::Tensor> outputs,
                                                   std::vector<Launch> launches, bool blocking) {
  check_usable(name);
  const c10::DeviceIndex device = check_tensors(name, tensors);
  const AccInteStream current = c10::accinte::getCurrentAccInteStream(device);
  refuse_capture(current, name);
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
  const bool any_source = type == OpType::RECVANYSOURCE;
  c10::accinte::launch_kernel(comm, [shared = shared_, launches = std::move(launches), status,
                                     name, any_source] {
    if (shared->aborted.load()) {
      status->fail(c10::str("accl: ", name, " did not run: the process group was aborted"));
      throw std::runtime_error(status->message());
    }
    // Every started operation is waited for, even after a failure: the engine
    // may use the aliases until then.
    std::vector<EngineOp> started;
    started.reserve(launches.size());
    std::exception_ptr first_error;
    try {
      for (const Launch& launch : launches) {
        if (EngineOp op = launch(*shared->engine)) {
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
    std::string cause;
    try {
      if (first_error) {
        std::rethrow_exception(first_error);
      }
      if (any_source) {
        status->source_rank.store(started.front()->sourceRank());
      }
      return;
    } catch (const std::exception& e) {
      cause = e.what();
    } catch (...) {
      cause = "an exception that is not a std::exception";
    }
    const std::string message = c10::str("accl: ", name, " failed on rank ", shared->rank, " (",
                                         shared->engine->name(), "): ", cause);
    status->fail(message);
    shared->broken.fail(message);
    throw std::runtime_error(message);
  }, name);

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
  return c10::make_intrusive<WorkACCL>(rank_, type, name, device, std::move(outputs),
                                       std::move(future), std::move(end), std::move(status),
                                       blocking);
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

// ---- collectives ------------------------------------------------------------------

c10::intrusive_ptr<Work> ProcessGroupACCL::broadcast(std::vector<at::Tensor>& tensors,
                                                     const BroadcastOptions& opts) {
  check_single("broadcast", tensors.size());
  Launch launch = [a = aliases_of(tensors), opts](CollectiveEngine& e) mutable {
    return e.broadcast(a, opts);
  };
  return enqueue(OpType::BROADCAST, "accl::broadcast", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allreduce(std::vector<at::Tensor>& tensors,
                                                     const AllreduceOptions& opts) {
  check_single("allreduce", tensors.size());
  check_reduce_op("allreduce", opts.reduceOp, tensors[0], /*premul_sum=*/true);
  const auto factor = premul_factor(opts.reduceOp);
  Launch launch = [a = aliases_of(tensors), run = engine_options(opts, factor),
                   factor](CollectiveEngine& e) mutable {
    if (factor) {
      a[0].mul_(*factor); // the buffer is overwritten by the sum anyway
    }
    return e.allreduce(a, run);
  };
  return enqueue(OpType::ALLREDUCE, "accl::allreduce", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const AllreduceCoalescedOptions& opts) {
  std::vector<Launch> launches;
  const auto factor = premul_factor(opts.reduceOp);
  const AllreduceOptions single = engine_options<AllreduceOptions>(opts, factor);
  for (const at::Tensor& t : tensors) {
    check_reduce_op("allreduce_coalesced", opts.reduceOp, t, /*premul_sum=*/true);
    launches.emplace_back([a = std::vector<at::Tensor>{cpu_alias(t)}, single, factor](
                              CollectiveEngine& e) mutable {
      if (factor) {
        a[0].mul_(*factor);
      }
      return e.allreduce(a, single);
    });
  }
  return enqueue(OpType::ALLREDUCE_COALESCED, "accl::allreduce_coalesced", tensors, tensors,
                 std::move(launches));
}

c10::intrusive_ptr<Work> ProcessGroupACCL::reduce(std::vector<at::Tensor>& tensors,
                                                  const ReduceOptions& opts) {
  check_single("reduce", tensors.size());
  check_reduce_op("reduce", opts.reduceOp, tensors[0]);
  Launch launch = [a = aliases_of(tensors), opts](CollectiveEngine& e) mutable {
    return e.reduce(a, opts);
  };
  return enqueue(OpType::REDUCE, "accl::reduce", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const AllgatherOptions& opts) {
  check_single("allgather", inputs.size());
  check_single("allgather", outputs.size());
  TORCH_CHECK(outputs[0].size() == static_cast<size_t>(size_), "accl: allgather needs ", size_,
              " output tensors (one per rank), got ", outputs[0].size());
  for (const at::Tensor& o : outputs[0]) {
    check_same("allgather", o, inputs[0], 1, "output and input");
  }
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs), opts](
                      CollectiveEngine& e) mutable { return e.allgather(o, i, opts); };
  return enqueue(OpType::ALLGATHER, "accl::allgather", concat(inputs, outputs[0]), outputs[0],
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                           const AllgatherOptions& opts) {
  check_same("all_gather_into_tensor", output, input, size_, "output and input");
  Launch launch = [o = cpu_alias(output), i = cpu_alias(input), opts](
                      CollectiveEngine& e) mutable { return e.allgather_into_tensor(o, i, opts); };
  return enqueue(OpType::_ALLGATHER_BASE, "accl::all_gather_into_tensor", {input, output},
                 {output}, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == static_cast<size_t>(size_),
              "accl: allgather_coalesced needs one output list per rank (", size_, "), got ",
              outputs.size());
  std::vector<Launch> launches;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<at::Tensor> gathered;
    for (const auto& per_rank : outputs) {
      TORCH_CHECK(per_rank.size() == inputs.size(), "accl: allgather_coalesced: each output "
                  "list needs ", inputs.size(), " tensors, got ", per_rank.size());
      check_same("allgather_coalesced", per_rank[k], inputs[k], 1, "output and input");
      gathered.push_back(per_rank[k]);
    }
    launches.emplace_back([o = std::vector<std::vector<at::Tensor>>{aliases_of(gathered)},
                           i = std::vector<at::Tensor>{cpu_alias(inputs[k])},
                           opts](CollectiveEngine& e) mutable { return e.allgather(o, i, opts); });
  }
  return enqueue(OpType::ALLGATHER_COALESCED, "accl::allgather_coalesced",
                 concat(inputs, flatten(outputs)), flatten(outputs), std::move(launches));
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "accl: allgather_into_tensor_coalesced needs "
              "as many outputs as inputs, got ", outputs.size(), " and ", inputs.size());
  std::vector<Launch> launches;
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_same("allgather_into_tensor_coalesced", outputs[k], inputs[k], size_,
               "output and input");
    launches.emplace_back([o = cpu_alias(outputs[k]), i = cpu_alias(inputs[k]), opts](
                              CollectiveEngine& e) mutable {
      return e.allgather_into_tensor(o, i, opts);
    });
  }
  return enqueue(OpType::COALESCED, "accl::allgather_into_tensor_coalesced",
                 concat(inputs, outputs), outputs, std::move(launches));
}

c10::intrusive_ptr<Work> ProcessGroupACCL::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs,
                                                  const GatherOptions& opts) {
  check_single("gather", inputs.size());
  const bool root = opts.rootRank == rank_;
  const std::vector<at::Tensor> gathered = outputs.empty() ? std::vector<at::Tensor>{}
                                                           : outputs[0];
  if (root) {
    TORCH_CHECK(outputs.size() == 1 && gathered.size() == static_cast<size_t>(size_),
                "accl: gather needs ", size_, " output tensors on the root");
    for (const at::Tensor& o : gathered) {
      check_same("gather", o, inputs[0], 1, "output and input");
    }
  }
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs), opts](
                      CollectiveEngine& e) mutable { return e.gather(o, i, opts); };
  return enqueue(OpType::GATHER, "accl::gather", concat(inputs, gathered), gathered,
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::scatter(std::vector<at::Tensor>& outputs,
                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                   const ScatterOptions& opts) {
  check_single("scatter", outputs.size());
  const std::vector<at::Tensor> sources = inputs.empty() ? std::vector<at::Tensor>{} : inputs[0];
  if (opts.rootRank == rank_) {
    TORCH_CHECK(inputs.size() == 1 && sources.size() == static_cast<size_t>(size_),
                "accl: scatter needs ", size_, " input tensors on the root");
    for (const at::Tensor& s : sources) {
      check_same("scatter", s, outputs[0], 1, "input and output");
    }
  }
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs), opts](
                      CollectiveEngine& e) mutable { return e.scatter(o, i, opts); };
  return enqueue(OpType::SCATTER, "accl::scatter", concat(sources, outputs), outputs,
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ReduceScatterOptions& opts) {
  check_single("reduce_scatter", outputs.size());
  check_single("reduce_scatter", inputs.size());
  check_reduce_op("reduce_scatter", opts.reduceOp, outputs[0], /*premul_sum=*/true);
  const auto factor = premul_factor(opts.reduceOp);
  TORCH_CHECK(inputs[0].size() == static_cast<size_t>(size_), "accl: reduce_scatter needs ",
              size_, " input tensors (one per rank), got ", inputs[0].size());
  for (const at::Tensor& i : inputs[0]) {
    check_same("reduce_scatter", i, outputs[0], 1, "input and output");
  }
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs),
                   run = engine_options(opts, factor), factor](CollectiveEngine& e) mutable {
    std::vector<std::vector<at::Tensor>> sources{{}};
    for (const at::Tensor& t : i[0]) {
      sources[0].push_back(scaled(t, factor)); // the engine keeps them while it runs
    }
    return e.reduce_scatter(o, sources, run);
  };
  return enqueue(OpType::REDUCE_SCATTER, "accl::reduce_scatter", concat(inputs[0], outputs),
                 outputs, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::_reduce_scatter_base(at::Tensor& output,
                                                                at::Tensor& input,
                                                                const ReduceScatterOptions& opts) {
  check_reduce_op("reduce_scatter_tensor", opts.reduceOp, output, /*premul_sum=*/true);
  check_same("reduce_scatter_tensor", input, output, size_, "input and output");
  const auto factor = premul_factor(opts.reduceOp);
  Launch launch = [o = cpu_alias(output), i = cpu_alias(input),
                   run = engine_options(opts, factor), factor](CollectiveEngine& e) mutable {
    at::Tensor source = scaled(i, factor);
    return e.reduce_scatter_tensor(o, source, run);
  };
  return enqueue(OpType::_REDUCE_SCATTER_BASE, "accl::reduce_scatter_tensor", {input, output},
                 {output}, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "accl: reduce_scatter_tensor_coalesced needs "
              "as many outputs as inputs, got ", outputs.size(), " and ", inputs.size());
  const auto factor = premul_factor(opts.reduceOp);
  std::vector<Launch> launches;
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_reduce_op("reduce_scatter_tensor_coalesced", opts.reduceOp, outputs[k],
                    /*premul_sum=*/true);
    check_same("reduce_scatter_tensor_coalesced", inputs[k], outputs[k], size_,
               "input and output");
    launches.emplace_back([o = cpu_alias(outputs[k]), i = cpu_alias(inputs[k]),
                           run = engine_options(opts, factor), factor](
                              CollectiveEngine& e) mutable {
      at::Tensor source = scaled(i, factor);
      return e.reduce_scatter_tensor(o, source, run);
    });
  }
  return enqueue(OpType::REDUCE_SCATTER_TENSOR_COALESCED,
                 "accl::reduce_scatter_tensor_coalesced", concat(inputs, outputs), outputs,
                 std::move(launches));
}

c10::intrusive_ptr<Work> ProcessGroupACCL::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                         std::vector<int64_t>& output_split_sizes,
                                                         std::vector<int64_t>& input_split_sizes,
                                                         const AllToAllOptions& opts) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "accl: all_to_all_single: input "
              "and output must have one dtype, got ", input.scalar_type(), " and ",
              output.scalar_type());
  check_splits("all_to_all_single", input, input_split_sizes, size_, "input");
  check_splits("all_to_all_single", output, output_split_sizes, size_, "output");
  Launch launch = [o = cpu_alias(output), i = cpu_alias(input), os = output_split_sizes,
                   is = input_split_sizes, opts](CollectiveEngine& e) mutable {
    return e.alltoall_base(o, i, os, is, opts);
  };
  return enqueue(OpType::ALLTOALL_BASE, "accl::all_to_all_single", {input, output}, {output},
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::alltoall(std::vector<at::Tensor>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const AllToAllOptions& opts) {
  TORCH_CHECK(outputs.size() == static_cast<size_t>(size_) &&
                  inputs.size() == static_cast<size_t>(size_),
              "accl: all_to_all needs ", size_, " input and output tensors (one per rank), got ",
              inputs.size(), " and ", outputs.size());
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs), opts](
                      CollectiveEngine& e) mutable { return e.alltoall(o, i, opts); };
  return enqueue(OpType::ALLTOALL, "accl::all_to_all", concat(inputs, outputs), outputs,
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                int tag) {
  check_single("send", tensors.size());
  Launch launch = [a = aliases_of(tensors), dst_rank, tag](CollectiveEngine& e) mutable {
    return e.send(a, dst_rank, tag);
  };
  return enqueue(OpType::SEND, "accl::send", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                int tag) {
  check_single("recv", tensors.size());
  Launch launch = [a = aliases_of(tensors), src_rank, tag](CollectiveEngine& e) mutable {
    return e.recv(a, src_rank, tag);
  };
  return enqueue(OpType::RECV, "accl::recv", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::recvAnysource(std::vector<at::Tensor>& tensors,
                                                         int tag) {
  check_single("recv", tensors.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!coalescing_, "accl: a receive from any rank cannot be coalesced");
  }
  Launch launch = [a = aliases_of(tensors), tag](CollectiveEngine& e) mutable {
    return e.recv(a, -1, tag);
  };
  return enqueue(OpType::RECVANYSOURCE, "accl::recv_anysource", tensors, tensors,
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::barrier(const BarrierOptions& opts) {
  Launch launch = [opts](CollectiveEngine& e) { return e.barrier(opts); };
  return enqueue(OpType::BARRIER, "accl::barrier", {}, {}, {std::move(launch)},
                 /*blocking=*/true);
}

// ---- life cycle -------------------------------------------------------------------

void ProcessGroupACCL::abort() {
  shared_->aborted.store(true);
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
