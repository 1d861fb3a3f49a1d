#include <csrc/distributed/GlooEngine.h>

namespace c10d::accinte {

GlooEngine::GlooEngine(c10::intrusive_ptr<c10d::Backend> gloo) : gloo_(std::move(gloo)) {
  TORCH_CHECK(gloo_, "accl: GlooEngine needs a ProcessGroupGloo, got None");
}

bool GlooEngine::supports(at::ScalarType dtype) const {
  // Gloo's dtype switch (ProcessGroupGloo's GENERATE_ALL_TYPES); float8 and
  // the unsigned types beyond uint8 are refused by it with "Invalid scalar type".
  switch (dtype) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kChar:
    case at::kByte:
    case at::kInt:
    case at::kLong:
    case at::kBool:
      return true;
    default:
      return false;
  }
}

EngineOp GlooEngine::broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) {
  return gloo_->broadcast(tensors, opts);
}

EngineOp GlooEngine::allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) {
  return gloo_->allreduce(tensors, opts);
}

EngineOp GlooEngine::reduce(std::vector<at::Tensor>& tensors, const ReduceOptions& opts) {
  return gloo_->reduce(tensors, opts);
}

EngineOp GlooEngine::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                               std::vector<at::Tensor>& inputs, const AllgatherOptions& opts) {
  return gloo_->allgather(outputs, inputs, opts);
}

EngineOp GlooEngine::allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                           const AllgatherOptions& opts) {
  // accl's contract is NCCL's: any shapes, the output holding size times the
  // input's elements (nn.SyncBatchNorm gathers n values into a (1, size * n)
  // tensor). Gloo splits the output's first dimension, so it gets flat views.
  if (output.is_contiguous() && input.is_contiguous()) {
    at::Tensor flat_output = output.view(-1);
    at::Tensor flat_input = input.view(-1);
    return gloo_->_allgather_base(flat_output, flat_input, opts);
  }
  return gloo_->_allgather_base(output, input, opts);
}

EngineOp GlooEngine::gather(std::vector<std::vector<at::Tensor>>& outputs,
                            std::vector<at::Tensor>& inputs, const GatherOptions& opts) {
  return gloo_->gather(outputs, inputs, opts);
}

EngineOp GlooEngine::scatter(std::vector<at::Tensor>& outputs,
                             std::vector<std::vector<at::Tensor>>& inputs,
                             const ScatterOptions& opts) {
  return gloo_->scatter(outputs, inputs, opts);
}

EngineOp GlooEngine::reduce_scatter(std::vector<at::Tensor>& outputs,
                                    std::vector<std::vector<at::Tensor>>& inputs,
                                    const ReduceScatterOptions& opts) {
  return gloo_->reduce_scatter(outputs, inputs, opts);
}

EngineOp GlooEngine::reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                           const ReduceScatterOptions& opts) {
  return gloo_->_reduce_scatter_base(output, input, opts);
}

EngineOp GlooEngine::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                              const AllToAllOptions& opts) {
  return gloo_->alltoall(outputs, inputs, opts);
}

EngineOp GlooEngine::alltoall_base(at::Tensor& output, at::Tensor& input,
                                   std::vector<int64_t>& output_split_sizes,
                                   std::vector<int64_t>& input_split_sizes,
                                   const AllToAllOptions& opts) {
  return gloo_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
}

EngineOp GlooEngine::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  return gloo_->send(tensors, dst_rank, tag);
}

EngineOp GlooEngine::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  return src_rank < 0 ? gloo_->recvAnysource(tensors, tag) : gloo_->recv(tensors, src_rank, tag);
}

EngineOp GlooEngine::barrier(const BarrierOptions& opts) {
  return gloo_->barrier(opts);
}

} // namespace c10d::accinte
