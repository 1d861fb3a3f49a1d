#pragma once
// CollectiveEngine: the seam where a collective library plugs into accl.
//
// Note [accl collective engine]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ProcessGroupACCL (ProcessGroupACCL.h) owns everything PyTorch's c10d asks of
// a device backend: checking arguments, ordering a collective after the
// caller's stream, keeping its memory alive, the Work and its Future, errors,
// coalescing. What moves the bytes is an engine. ProcessGroupACCL calls it
// from inside a kernel on the group's communication stream, with host
// aliases of the device tensors (csrc/emulation/CpuAlias.h), so an engine
// reads and writes device memory in place and in stream order.
//
// Each call *starts* one operation on host-addressable tensors and returns a
// handle; the kernel then waits for every handle it holds (handle->wait()
// blocks until the data has moved and throws if it could not). Starting
// before waiting is what lets a batch of sends and receives (batch_isend_irecv,
// a ring) progress together inside one kernel.
//
// The first engine, GlooEngine (GlooEngine.h), is PyTorch's own Gloo: a
// ProcessGroupGloo driven through the c10d::Backend virtuals, on the aliases.
// The second, ShmEngine (ShmEngine.h), moves the hot collectives of ranks on
// one host through shared memory and forwards the rest to a GlooEngine (it
// is a ForwardingEngine, ForwardingEngine.h: the base of an engine that moves
// some collectives itself); the group's creator picks one per group
// (torch_accinte/distributed.py).
// A vendor whose collective library enqueues work on a device stream itself
// (acclAllReduce(send, recv, count, dtype, op, comm, stream), as NCCL) would
// call it from ProcessGroupACCL::enqueue on the communication stream instead
// of launching a kernel; the rest of ProcessGroupACCL stays as it is.

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace c10d::accinte {

/// A started operation: wait() blocks until it has finished, throws if it failed.
using EngineOp = c10::intrusive_ptr<c10d::Work>;

// LITERALINCLUDE START: ACCL COLLECTIVE ENGINE
/// Moves the data of collectives over host-addressable tensors. Every method
/// is called by the thread running the communication stream's work (its
/// worker, or a host thread that waits for the stream and runs the queue
/// itself), one at a time per group, in the same order on every rank of the
/// group; tensors are dense, contiguous CPU tensors (aliases of device
/// memory, or host temporaries the engine must keep alive until its handle
/// completes). Options are c10d's;
/// reductions are never PREMUL_SUM (Note [accl PREMUL_SUM]). A method may
/// throw instead of returning a handle, or return nullptr if the operation
/// has already finished.
class CollectiveEngine {
 public:
  virtual ~CollectiveEngine() = default;

  /// The engine's name, for messages ("gloo").
  virtual std::string name() const = 0;
  /// True if the engine can reduce or move elements of `dtype`; false makes
  /// the collective fail at the call, before anything is queued.
  virtual bool supports(at::ScalarType dtype) const = 0;

  virtual EngineOp broadcast(std::vector<at::Tensor>& tensors,
                             const BroadcastOptions& opts) = 0;
  virtual EngineOp allreduce(std::vector<at::Tensor>& tensors,
                             const AllreduceOptions& opts) = 0;
  virtual EngineOp reduce(std::vector<at::Tensor>& tensors, const ReduceOptions& opts) = 0;
  virtual EngineOp allgather(std::vector<std::vector<at::Tensor>>& outputs,
                             std::vector<at::Tensor>& inputs,
                             const AllgatherOptions& opts) = 0;
  /// `output` holds every rank's `input`, in rank order.
  virtual EngineOp allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                         const AllgatherOptions& opts) = 0;
  virtual EngineOp gather(std::vector<std::vector<at::Tensor>>& outputs,
                          std::vector<at::Tensor>& inputs, const GatherOptions& opts) = 0;
  virtual EngineOp scatter(std::vector<at::Tensor>& outputs,
                           std::vector<std::vector<at::Tensor>>& inputs,
                           const ScatterOptions& opts) = 0;
  virtual EngineOp reduce_scatter(std::vector<at::Tensor>& outputs,
                                  std::vector<std::vector<at::Tensor>>& inputs,
                                  const ReduceScatterOptions& opts) = 0;
  /// `input` is the concatenation of one `output`-sized chunk per rank.
  virtual EngineOp reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                         const ReduceScatterOptions& opts) = 0;
  virtual EngineOp alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                            const AllToAllOptions& opts) = 0;
  /// Empty split lists mean equal splits along dimension 0.
  virtual EngineOp alltoall_base(at::Tensor& output, at::Tensor& input,
                                 std::vector<int64_t>& output_split_sizes,
                                 std::vector<int64_t>& input_split_sizes,
                                 const AllToAllOptions& opts) = 0;
  virtual EngineOp send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) = 0;
  /// `src_rank` < 0: from any rank; the handle's sourceRank() says which.
  virtual EngineOp recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) = 0;
  virtual EngineOp barrier(const BarrierOptions& opts) = 0;
  /// Makes collectives running on other threads fail soon rather than wait for
  /// their peers (the group was aborted); thread-safe. Default: nothing to stop
  /// (Gloo's waits end at their own timeout, or when the peers' connections close).
  virtual void abort() {}
};
// LITERALINCLUDE END: ACCL COLLECTIVE ENGINE

} // namespace c10d::accinte
