#pragma once
// Note [accl ranks agree before they move data]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every rank of a group must call the same collective, in the same order, on
// tensors of the same dtype and size. When they do not (one rank all_reduces
// 1024 elements, another 2048), an engine that moves bytes through shared
// slots cannot tell: one rank may fail while another accepts what its buffer
// happened to hold. So before a group-wide collective moves anything, its
// kernel exchanges a fingerprint (the collective, the dtype, the element count
// of the tensor every rank must have alike) with an allgather of a few words
// through the same engine, and compares. Every rank gets the same table, so
// every rank reaches the same verdict, and on a mismatch every rank fails the
// collective with a message naming each rank's call (the group then breaks,
// Note [accl errors]). NCCL does not check; PyTorch's ProcessGroupWrapper
// checks only under TORCH_DISTRIBUTED_DEBUG=DETAIL, through the store. A
// group made with ACCL_AGREEMENT_CHECK=0 skips the check, as NCCL does, for
// programs that measured its cost (one small allgather per collective).
//
// Point-to-point operations involve two ranks and are not checked (a
// group-wide exchange would wait for ranks that are not taking part), nor are
// coalesced batches, which may hold them. Gathers, scatters and all_to_all
// check the collective and the dtype: their sizes may differ between ranks.

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <csrc/distributed/CollectiveEngine.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace c10d::accinte {

/// What the ranks must agree on. `numel` is -1 where sizes may differ.
struct Fingerprint {
  int64_t op;
  int64_t dtype;
  int64_t numel;
};

/// The fingerprint of a collective of type `type` whose first tensor in
/// `tensors` is the one every rank has alike; nullopt for the operations that
/// are not checked (sends, receives, coalesced batches).
std::optional<Fingerprint> fingerprint_of(OpType type, const std::vector<at::Tensor>& tensors);

/// Exchanges `mine` with the `size` ranks of the group through `engine` and
/// throws, on every rank alike, if any rank's fingerprint differs from rank
/// 0's, naming what each rank called.
void check_agreement(CollectiveEngine& engine, int size, const Fingerprint& mine);

} // namespace c10d::accinte
