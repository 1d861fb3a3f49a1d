#pragma once
// ForwardingEngine: the base of an engine that moves some collectives itself
// and hands the rest to another engine (Note [accl collective engine]).

#include <csrc/distributed/CollectiveEngine.h>

#include <memory>

namespace c10d::accinte {

/// An engine that implements some collectives itself and hands every other
/// call to the engine it wraps, as NCCL hands a transfer its SHM transport
/// cannot make to the network one. Every method here forwards, unchanged and
/// at once, to the wrapped engine; a subclass overrides only what it moves
/// itself, and may still hand a call on (a reduction it lacks, say) through
/// wrapped(). The wrapped engine sees the forwarded calls in the order they
/// are made, so the CollectiveEngine contract (same calls, same order on every
/// rank) holds for it as long as the subclass decides the same way on every
/// rank. supports() and abort() forward too: an override of abort() stops its
/// own waits and then calls ForwardingEngine::abort().
class ForwardingEngine : public CollectiveEngine {
 public:
  /// Throws if `wrapped` is null.
  explicit ForwardingEngine(std::unique_ptr<CollectiveEngine> wrapped);

  bool supports(at::ScalarType dtype) const override;
  void abort() override;

  EngineOp broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) override;
  EngineOp allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) override;
  EngineOp reduce(std::vector<at::Tensor>& tensors, const ReduceOptions& opts) override;
  EngineOp allgather(std::vector<std::vector<at::Tensor>>& outputs,
                     std::vector<at::Tensor>& inputs, const AllgatherOptions& opts) override;
  EngineOp allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                 const AllgatherOptions& opts) override;
  EngineOp gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                  const GatherOptions& opts) override;
  EngineOp scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                   const ScatterOptions& opts) override;
  EngineOp reduce_scatter(std::vector<at::Tensor>& outputs,
                          std::vector<std::vector<at::Tensor>>& inputs,
                          const ReduceScatterOptions& opts) override;
  EngineOp reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                 const ReduceScatterOptions& opts) override;
  EngineOp alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                    const AllToAllOptions& opts) override;
  EngineOp alltoall_base(at::Tensor& output, at::Tensor& input,
                         std::vector<int64_t>& output_split_sizes,
                         std::vector<int64_t>& input_split_sizes,
                         const AllToAllOptions& opts) override;
  EngineOp send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  EngineOp recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  EngineOp barrier(const BarrierOptions& opts) override;

 protected:
  /// The engine calls are handed to; owned, never null.
  CollectiveEngine& wrapped() const { return *wrapped_; }

 private:
  std::unique_ptr<CollectiveEngine> wrapped_;
};

} // namespace c10d::accinte
