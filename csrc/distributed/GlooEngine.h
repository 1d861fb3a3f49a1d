#pragma once
// GlooEngine: accl's first CollectiveEngine, PyTorch's own Gloo on host
// aliases of device memory (Note [accl collective engine]).
//
// The wheel ships no gloo headers (ProcessGroupGloo.hpp includes <gloo/...>),
// so the ProcessGroupGloo is made in Python (dist.ProcessGroupGloo, see
// torch_accinte/distributed.py) and driven here only through the
// c10d::Backend virtuals, which it implements for CPU tensors.

#include <csrc/distributed/CollectiveEngine.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace c10d::accinte {

class GlooEngine final : public CollectiveEngine {
 public:
  /// `gloo` is a ProcessGroupGloo of the same ranks as the accl group, used
  /// by nothing else (its operations are tagged in call order).
  explicit GlooEngine(c10::intrusive_ptr<c10d::Backend> gloo);

  std::string name() const override { return "gloo"; }
  bool supports(at::ScalarType dtype) const override;

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

 private:
  c10::intrusive_ptr<c10d::Backend> gloo_;
};

} // namespace c10d::accinte
