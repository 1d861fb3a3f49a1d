#pragma once
// ShmEngine: accl's intra-node engine. Ranks of a group that all run on one
// host move the bytes of the hot collectives through a shared segment
// (Note [accl shm transport]) instead of Gloo's TCP loopback, as NCCL's SHM
// and P2P transports do inside a node; everything else goes to the engine it
// wraps, by ForwardingEngine's forwarding (Note [accl shm engine]).
//
// Note [accl shm engine]
// ~~~~~~~~~~~~~~~~~~~~~~
// all_reduce, broadcast, all_gather_into_tensor and reduce_scatter_tensor
// run here, chunk by chunk through the slots of ShmSegment; any other
// collective, and any reduction beyond SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR
// and BXOR, is forwarded to the wrapped engine (Gloo). Both see the same
// calls in the same order on every rank, so the two never disagree on which
// one moves a collective. An operation here finishes before its call
// returns (the handle is null: nothing left to wait for).
//
// all_reduce of one chunk, split in `size` shares (equal element ranges):
// each rank copies the peers' shares of its input into its slot and syncs;
// rank r then reduces share r across every rank (its own input, the peers'
// slots), in rank order 0, 1, ..., with ATen's CPU operators, into share r of
// its own slot; after a second sync every rank copies each share from the
// slot of the rank that reduced it. Each element is thus reduced once, by one rank,
// in one order: the result is bit-identical on every rank, and equal to the
// CPU's (and to Gloo's) for any two ranks. AVG sums, then divides by `size`
// (as Gloo). reduce_scatter_tensor is the first half (one sync per chunk),
// all_gather_into_tensor and broadcast copies around one sync per chunk.

#include <csrc/distributed/ForwardingEngine.h>
#include <csrc/distributed/ShmSegment.h>

#include <memory>

namespace c10d::accinte {

// LITERALINCLUDE START: ACCL SHM ENGINE
class ShmEngine final : public ForwardingEngine {
 public:
  /// Moves data through `segment` (every rank of the group maps it) and
  /// forwards what it does not implement to `fallback`. Throws if either is null.
  ShmEngine(std::unique_ptr<ShmSegment> segment, std::unique_ptr<CollectiveEngine> fallback);

  std::string name() const override { return "shm"; }
  /// Aborts the segment's waits (ShmSegment::abort), then the fallback's.
  void abort() override;

  // The collectives ShmEngine moves itself (Note [accl shm engine]); allreduce
  // and reduce_scatter_tensor still hand a reduction they lack to the wrapped
  // engine. Every other one (reduce, allgather, gather, scatter,
  // reduce_scatter, alltoall, alltoall_base, send, recv, barrier), and
  // supports(), is ForwardingEngine's: handed to the wrapped engine unchanged.
  EngineOp broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) override;
  EngineOp allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) override;
  EngineOp allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                 const AllgatherOptions& opts) override;
  EngineOp reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                 const ReduceScatterOptions& opts) override;

 private:
  /// Reduces `parts` (one per rank, in rank order) into `out` with `op`.
  void reduce_into(at::Tensor out, const std::vector<at::Tensor>& parts,
                   const ReduceOp& op) const;

  std::unique_ptr<ShmSegment> segment_;
};
// LITERALINCLUDE END: ACCL SHM ENGINE

} // namespace c10d::accinte
