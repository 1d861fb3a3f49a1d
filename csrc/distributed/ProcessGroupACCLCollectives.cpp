// The collectives of ProcessGroupACCL: each checks its arguments, builds the
// host aliases its kernel will hand to the engine, and queues one kernel
// through ProcessGroupACCL::enqueue (ProcessGroupACCL.cpp; Note [accl
// collectives]).
#include <csrc/distributed/ProcessGroupACCL.h>

#include <csrc/emulation/CpuAlias.h>

#include <c10/util/Exception.h>

#include <optional>

namespace c10d::accinte {

using at::native::accinte::cpu_alias;

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

// Note [accl PREMUL_SUM]
// ~~~~~~~~~~~~~~~~~~~~~~
// NCCL's PREMUL_SUM (FSDP2 uses it for a custom gradient divide factor) is a
// SUM of the inputs each multiplied by a factor first. The engine only sums:
// the kernel scales a host copy of the input (or, for an in-place all_reduce,
// the buffer itself) and sums that. A factor given as a tensor is read at the
// call, after the call's checks (a synchronisation if it lives on accinte).
std::optional<double> read_premul_factor(const ReduceOp& op) {
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

// gather's outputs and scatter's inputs: one list of `size` tensors on the
// root, none (or one, unused) elsewhere. Returns the list (empty if none).
std::vector<at::Tensor> root_list(const char* name,
                                  const std::vector<std::vector<at::Tensor>>& lists,
                                  bool root, int size, const at::Tensor& other,
                                  const char* role, const char* what) {
  TORCH_CHECK(lists.size() <= 1, "accl: ", name, " takes at most one list of ", role,
              " tensors per process, got ", lists.size());
  const std::vector<at::Tensor> list = lists.empty() ? std::vector<at::Tensor>{} : lists[0];
  if (root) {
    TORCH_CHECK(list.size() == static_cast<size_t>(size), "accl: ", name, " needs ", size, " ",
                role, " tensors on the root, got ", list.size());
    for (const at::Tensor& t : list) {
      check_same(name, t, other, 1, what);
    }
  }
  return list;
}

/// Refuses a root rank outside the group, at the call: the engines index their buffers by it.
void check_root(const char* name, int64_t root, int size) {
  TORCH_CHECK(root >= 0 && root < size, "accl: ", name, ": invalid root rank ", root,
              " (the group has ", size, " ranks: 0 to ", size - 1, ")");
}

} // namespace

std::optional<double> ProcessGroupACCL::premul_factor(const char* name, const ReduceOp& op,
                                                      const std::vector<at::Tensor>& tensors) {
  if (op != ReduceOp::PREMUL_SUM) {
    return std::nullopt;
  }
  check_call(name, tensors);
  return read_premul_factor(op);
}

c10::intrusive_ptr<Work> ProcessGroupACCL::broadcast(std::vector<at::Tensor>& tensors,
                                                     const BroadcastOptions& opts) {
  check_single("broadcast", tensors.size());
  check_root("broadcast", opts.rootRank, size_);
  Launch launch = [a = aliases_of(tensors), opts](CollectiveEngine& e) mutable {
    return e.broadcast(a, opts);
  };
  return enqueue(OpType::BROADCAST, "accl::broadcast", tensors, tensors, {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::allreduce(std::vector<at::Tensor>& tensors,
                                                     const AllreduceOptions& opts) {
  check_single("allreduce", tensors.size());
  check_reduce_op("allreduce", opts.reduceOp, tensors[0], /*premul_sum=*/true);
  const auto factor = premul_factor("accl::allreduce", opts.reduceOp, tensors);
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
  for (const at::Tensor& t : tensors) {
    check_reduce_op("allreduce_coalesced", opts.reduceOp, t, /*premul_sum=*/true);
  }
  const auto factor = premul_factor("accl::allreduce_coalesced", opts.reduceOp, tensors);
  const AllreduceOptions single = engine_options<AllreduceOptions>(opts, factor);
  std::vector<Launch> launches;
  for (const at::Tensor& t : tensors) {
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
  check_root("reduce", opts.rootRank, size_);
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
  check_root("gather", opts.rootRank, size_);
  const std::vector<at::Tensor> gathered = root_list(
      "gather", outputs, opts.rootRank == rank_, size_, inputs[0], "output", "output and input");
  Launch launch = [o = aliases_of(outputs), i = aliases_of(inputs), opts](
                      CollectiveEngine& e) mutable { return e.gather(o, i, opts); };
  return enqueue(OpType::GATHER, "accl::gather", concat(inputs, gathered), gathered,
                 {std::move(launch)});
}

c10::intrusive_ptr<Work> ProcessGroupACCL::scatter(std::vector<at::Tensor>& outputs,
                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                   const ScatterOptions& opts) {
  check_single("scatter", outputs.size());
  check_root("scatter", opts.rootRank, size_);
  const std::vector<at::Tensor> sources = root_list(
      "scatter", inputs, opts.rootRank == rank_, size_, outputs[0], "input", "input and output");
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
  TORCH_CHECK(inputs[0].size() == static_cast<size_t>(size_), "accl: reduce_scatter needs ",
              size_, " input tensors (one per rank), got ", inputs[0].size());
  for (const at::Tensor& i : inputs[0]) {
    check_same("reduce_scatter", i, outputs[0], 1, "input and output");
  }
  const auto factor =
      premul_factor("accl::reduce_scatter", opts.reduceOp, concat(inputs[0], outputs));
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
  const auto factor =
      premul_factor("accl::reduce_scatter_tensor", opts.reduceOp, {input, output});
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
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_reduce_op("reduce_scatter_tensor_coalesced", opts.reduceOp, outputs[k],
                    /*premul_sum=*/true);
    check_same("reduce_scatter_tensor_coalesced", inputs[k], outputs[k], size_,
               "input and output");
  }
  const auto factor = premul_factor("accl::reduce_scatter_tensor_coalesced", opts.reduceOp,
                                    concat(inputs, outputs));
  std::vector<Launch> launches;
  for (size_t k = 0; k < inputs.size(); ++k) {
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

} // namespace c10d::accinte
