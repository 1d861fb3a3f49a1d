#include <csrc/distributed/ForwardingEngine.h>

#include <c10/util/Exception.h>

namespace c10d::accinte {

ForwardingEngine::ForwardingEngine(std::unique_ptr<CollectiveEngine> wrapped)
    : wrapped_(std::move(wrapped)) {
  TORCH_CHECK(wrapped_, "accl: a forwarding engine needs an engine to wrap");
}

bool ForwardingEngine::supports(at::ScalarType dtype) const {
  return wrapped_->supports(dtype);
}

void ForwardingEngine::abort() {
  wrapped_->abort();
}

EngineOp ForwardingEngine::broadcast(std::vector<at::Tensor>& tensors,
                                     const BroadcastOptions& opts) {
  return wrapped_->broadcast(tensors, opts);
}

EngineOp ForwardingEngine::allreduce(std::vector<at::Tensor>& tensors,
                                     const AllreduceOptions& opts) {
  return wrapped_->allreduce(tensors, opts);
}

EngineOp ForwardingEngine::reduce(std::vector<at::Tensor>& tensors, const ReduceOptions& opts) {
  return wrapped_->reduce(tensors, opts);
}

EngineOp ForwardingEngine::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                     std::vector<at::Tensor>& inputs,
                                     const AllgatherOptions& opts) {
  return wrapped_->allgather(outputs, inputs, opts);
}

EngineOp ForwardingEngine::allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                                 const AllgatherOptions& opts) {
  return wrapped_->allgather_into_tensor(output, input, opts);
}

EngineOp ForwardingEngine::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                  std::vector<at::Tensor>& inputs, const GatherOptions& opts) {
  return wrapped_->gather(outputs, inputs, opts);
}

EngineOp ForwardingEngine::scatter(std::vector<at::Tensor>& outputs,
                                   std::vector<std::vector<at::Tensor>>& inputs,
                                   const ScatterOptions& opts) {
  return wrapped_->scatter(outputs, inputs, opts);
}

EngineOp ForwardingEngine::reduce_scatter(std::vector<at::Tensor>& outputs,
                                          std::vector<std::vector<at::Tensor>>& inputs,
                                          const ReduceScatterOptions& opts) {
  return wrapped_->reduce_scatter(outputs, inputs, opts);
}

EngineOp ForwardingEngine::reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                                 const ReduceScatterOptions& opts) {
  return wrapped_->reduce_scatter_tensor(output, input, opts);
}

EngineOp ForwardingEngine::alltoall(std::vector<at::Tensor>& outputs,
                                    std::vector<at::Tensor>& inputs,
                                    const AllToAllOptions& opts) {
  return wrapped_->alltoall(outputs, inputs, opts);
}

EngineOp ForwardingEngine::alltoall_base(at::Tensor& output, at::Tensor& input,
                                         std::vector<int64_t>& output_split_sizes,
                                         std::vector<int64_t>& input_split_sizes,
                                         const AllToAllOptions& opts) {
  return wrapped_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
}

EngineOp ForwardingEngine::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  return wrapped_->send(tensors, dst_rank, tag);
}

EngineOp ForwardingEngine::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  return wrapped_->recv(tensors, src_rank, tag);
}

EngineOp ForwardingEngine::barrier(const BarrierOptions& opts) {
  return wrapped_->barrier(opts);
}

} // namespace c10d::accinte
