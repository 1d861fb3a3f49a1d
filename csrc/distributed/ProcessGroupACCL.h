#pragma once
// ProcessGroupACCL: torch.distributed's backend for accinte tensors, shaped
// like ProcessGroupNCCL at c10d's boundary. Registered from Python as "accl"
// for device "accinte" (torch_accinte/distributed.py).
//
// Note [accl collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every collective runs as one kernel on the group's communication stream of
// its device (a high-priority pool stream: pool streams are shared, as
// NCCL's are, so several groups may queue on one), so it is ordered
// the way CUDA code orders NCCL:
//   1. at the call, the arguments are checked (accinte, one device per group,
//      dense, contiguous, a dtype the engine moves, no stream capture), so a
//      bad call raises there and queues nothing;
//   2. the communication stream waits for an event on the caller's current
//      stream: the collective sees everything queued before it;
//   3. every input and output is recorded on the communication stream
//      (record_stream), so the caching allocator does not hand their memory
//      out again before the collective ended, even if the caller frees them;
//   4. the kernel runs the engine (Note [accl collective engine]) on host
//      aliases of the tensors, built on the calling thread;
//   5. an end event on the communication stream completes the Work's Future
//      with the output tensors (Note [accl work and streams]).
// The call returns after step 5, whatever the device is doing.
//
// Note [accl errors]
// ~~~~~~~~~~~~~~~~~~
// A collective fails inside its kernel (a peer died, the group's timeout
// expired in the engine). The failure is kept three ways: the kernel's error
// (reported by the next synchronisation with the communication stream or the
// device, and at the call under ACCINTE_LAUNCH_BLOCKING=1); the Work's status
// (wait() fails the caller's stream behind it; synchronize() throws); and the
// group's, which refuses every later collective at the call with the first
// failure's message, as a NCCL communicator is aborted after an error. A
// Work.wait(timeout) that runs out of time counts as such a failure, and also
// aborts the group (as NCCL aborts its communicator then), so destroying it
// does not wait for the stalled kernel. The group cannot be repaired: destroy
// it and make a new one.
//
// Note [accl coalescing]
// ~~~~~~~~~~~~~~~~~~~~~~
// Between startCoalescing and endCoalescing (batch_isend_irecv, the
// coalescing manager), each call is checked and kept but returns no Work;
// endCoalescing queues them as one kernel that starts every operation, then
// waits for all of them. A ring of isend/irecv only completes that way: each
// send waiting alone in a kernel of its own would wait for a receive queued
// behind it. The *_coalesced collectives are one kernel the same way.

#include <csrc/distributed/CollectiveEngine.h>
#include <csrc/distributed/WorkACCL.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace c10d::accinte {

class ProcessGroupACCL final : public c10d::Backend {
 public:
  /// The group's state the kernels share with it (they may outlive it).
  struct Shared;

  /// A group of `size` ranks, this one `rank`, moving data with `engine`
  /// (whose own timeout bounds every collective).
  ProcessGroupACCL(int rank, int size, std::unique_ptr<CollectiveEngine> engine,
                   std::chrono::milliseconds timeout);
  /// Does not wait for queued collectives: their kernels keep what they use.
  ~ProcessGroupACCL() override;

  const std::string getBackendName() const override { return "accl"; }
  /// The engine's name ("gloo", "shm"), for messages and tests.
  std::string engine_name() const;
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<Work> endCoalescing() override;

  c10::intrusive_ptr<Work> broadcast(std::vector<at::Tensor>& tensors,
                                     const BroadcastOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce(std::vector<at::Tensor>& tensors,
                                     const AllreduceOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                               const AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<Work> reduce(std::vector<at::Tensor>& tensors,
                                  const ReduceOptions& opts) override;
  c10::intrusive_ptr<Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                     std::vector<at::Tensor>& inputs,
                                     const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                           const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                               std::vector<at::Tensor>& inputs,
                                               const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                  std::vector<at::Tensor>& inputs,
                                  const GatherOptions& opts) override;
  c10::intrusive_ptr<Work> scatter(std::vector<at::Tensor>& outputs,
                                   std::vector<std::vector<at::Tensor>>& inputs,
                                   const ScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                          std::vector<std::vector<at::Tensor>>& inputs,
                                          const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                         std::vector<int64_t>& output_split_sizes,
                                         std::vector<int64_t>& input_split_sizes,
                                         const AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall(std::vector<at::Tensor>& outputs,
                                    std::vector<at::Tensor>& inputs,
                                    const AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                int tag) override;
  c10::intrusive_ptr<Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                int tag) override;
  c10::intrusive_ptr<Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  /// Queued behind the group's earlier collectives; its wait() blocks the host.
  c10::intrusive_ptr<Work> barrier(const BarrierOptions& opts) override;

  /// The group refuses further collectives; queued ones that have not started
  /// fail at once ("did not run"); one already inside the engine ends within
  /// the engine's timeout. Does not block.
  void abort() override;
  /// Waits (on the host) for the collectives queued so far, then refuses
  /// further ones; a failure among them is reported as a warning.
  void shutdown() override;
  c10::intrusive_ptr<Options> getBackendOptions() override;

 private:
  /// One operation of a kernel: starts it on the engine, returns its handle
  /// (or nullptr if it has already finished). Captures host aliases only.
  using Launch = std::function<EngineOp(CollectiveEngine&)>;
  /// The kernel enqueue queues on the communication stream: runs its
  /// launches, waits for every handle, reports a failure (ProcessGroupACCL.cpp).
  class CollectiveKernel;

  /// Steps 1-5 of Note [accl collectives] for `launches`, run in order in one
  /// kernel, every handle waited for at the end. `tensors` are all device
  /// tensors involved (checked, recorded on the stream), `outputs` what the
  /// Future holds. Under coalescing, keeps them for endCoalescing and returns
  /// nullptr.
  c10::intrusive_ptr<Work> enqueue(OpType type, const char* name,
                                   std::vector<at::Tensor> tensors,
                                   std::vector<at::Tensor> outputs, std::vector<Launch> launches,
                                   bool blocking = false);
  /// Step 1 for every tensor of a call; returns their device (the group's).
  c10::DeviceIndex check_tensors(const char* name, const std::vector<at::Tensor>& tensors);
  /// Step 1 whole: check_usable, check_tensors, and the refusal under graph
  /// capture. Returns the device. Throws before anything is queued.
  c10::DeviceIndex check_call(const char* name, const std::vector<at::Tensor>& tensors);
  /// PREMUL_SUM's factor (Note [accl PREMUL_SUM]), or nullopt for another op.
  /// For PREMUL_SUM, runs check_call(name, tensors) first: a factor tensor on
  /// accinte is read with a copy to the host, which must not be what refuses
  /// a call on a broken group or under capture.
  std::optional<double> premul_factor(const char* name, const ReduceOp& op,
                                      const std::vector<at::Tensor>& tensors);
  /// Throws if the group was aborted, shut down or broke (Note [accl errors]).
  void check_usable(const char* name) const;
  /// Refuses reductions the engine cannot do on `t`'s dtype; PREMUL_SUM only
  /// where `premul_sum` (Note [accl PREMUL_SUM]).
  void check_reduce_op(const char* name, const ReduceOp& op, const at::Tensor& t,
                       bool premul_sum = false) const;
  c10::accinte::AccInteStream comm_stream(c10::DeviceIndex device);

  std::shared_ptr<Shared> shared_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::optional<c10::DeviceIndex> device_;                // guarded by mutex_
  std::optional<c10::accinte::AccInteStream> comm_;       // guarded by mutex_
  bool coalescing_ = false;                               // guarded by mutex_
  struct Pending {
    std::vector<at::Tensor> tensors, outputs;
    std::vector<Launch> launches;
  };
  std::vector<Pending> pending_;                          // guarded by mutex_
};

} // namespace c10d::accinte
