#include <csrc/distributed/ShmEngine.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>

namespace c10d::accinte {

namespace {

// The reductions ShmEngine runs itself (Note [accl shm engine]).
bool reduces_here(const ReduceOp& op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
    case ReduceOp::PRODUCT:
    case ReduceOp::MIN:
    case ReduceOp::MAX:
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      return true;
    default:
      return false;
  }
}

// out = a (op) b; `out` may be `a`.
void combine(at::Tensor out, const at::Tensor& a, const at::Tensor& b,
             const ReduceOp& op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      at::add_out(out, a, b);
      return;
    case ReduceOp::PRODUCT:
      at::mul_out(out, a, b);
      return;
    case ReduceOp::MIN:
      at::minimum_out(out, a, b);
      return;
    case ReduceOp::MAX:
      at::maximum_out(out, a, b);
      return;
    case ReduceOp::BAND:
      at::bitwise_and_out(out, a, b);
      return;
    case ReduceOp::BOR:
      at::bitwise_or_out(out, a, b);
      return;
    case ReduceOp::BXOR:
      at::bitwise_xor_out(out, a, b);
      return;
    default:
      TORCH_CHECK(false, "accl shm: unexpected reduction");
  }
}

// `count` elements of `like`'s dtype at `data`, as a CPU tensor that owns nothing.
at::Tensor view(std::byte* data, int64_t count, const at::Tensor& like) {
  return at::from_blob(data, {count}, like.options().device(at::kCPU));
}

std::byte* bytes_of(const at::Tensor& t) {
  return static_cast<std::byte*>(t.data_ptr());
}

// Elements [begin, end) of a chunk of `count` that rank `r` of `size` reduces.
int64_t share_begin(int64_t count, int r, int size) {
  return count * r / size;
}

} // namespace

ShmEngine::ShmEngine(std::unique_ptr<ShmSegment> segment,
                     std::unique_ptr<CollectiveEngine> fallback)
    : ForwardingEngine(std::move(fallback)), segment_(std::move(segment)) {
  TORCH_CHECK(segment_, "accl: ShmEngine needs a segment");
}

void ShmEngine::reduce_into(at::Tensor out, const std::vector<at::Tensor>& parts,
                            const ReduceOp& op) const {
  if (parts.size() == 1) {
    out.copy_(parts[0]);
  } else {
    combine(out, parts[0], parts[1], op);
  }
  for (size_t q = 2; q < parts.size(); ++q) {
    combine(out, out, parts[q], op);
  }
  if (op == ReduceOp::AVG) {
    out.div_(static_cast<int64_t>(parts.size()));
  }
}

// LITERALINCLUDE START: ACCL SHM ALLREDUCE
EngineOp ShmEngine::allreduce(std::vector<at::Tensor>& tensors, const AllreduceOptions& opts) {
  if (!reduces_here(opts.reduceOp)) {
    return wrapped().allreduce(tensors, opts);
  }
  ShmSegment& seg = *segment_;
  const at::Tensor& t = tensors.at(0);
  const int me = seg.rank(), size = seg.size();
  const int64_t elem = t.element_size();
  const int64_t per_chunk = static_cast<int64_t>(seg.slot_bytes()) / elem;
  TORCH_CHECK(per_chunk > 0, "accl shm: all_reduce: a slot of ", seg.slot_bytes(),
              " bytes holds no ", t.scalar_type(), " element");
  for (int64_t offset = 0; offset < t.numel(); offset += per_chunk) {
    const int64_t count = std::min(per_chunk, t.numel() - offset);
    std::byte* data = bytes_of(t) + offset * elem;
    const int buffer = seg.next_buffer();
    auto slot = [&](int q) { return seg.slot(buffer, q); };
    std::byte* mine = slot(me);
    // This rank's share stays in its input; the peers' shares go to its slot.
    const int64_t begin = share_begin(count, me, size), end = share_begin(count, me + 1, size);
    std::memcpy(mine, data, begin * elem);
    std::memcpy(mine + end * elem, data + end * elem, (count - end) * elem);
    seg.sync("allreduce");
    // Reduce this rank's share across every rank, in rank order, into its slot.
    if (end > begin) {
      std::vector<at::Tensor> parts;
      for (int q = 0; q < size; ++q) {
        parts.push_back(view((q == me ? data : slot(q)) + begin * elem, end - begin, t));
      }
      reduce_into(view(mine + begin * elem, end - begin, t), parts, opts.reduceOp);
    }
    seg.sync("allreduce");
    // Every share from the rank that reduced it.
    for (int q = 0; q < size; ++q) {
      const int64_t b = share_begin(count, q, size), e = share_begin(count, q + 1, size);
      std::memcpy(data + b * elem, slot(q) + b * elem, (e - b) * elem);
    }
  }
  return nullptr;
}
// LITERALINCLUDE END: ACCL SHM ALLREDUCE

void ShmEngine::abort() {
  segment_->abort();
  ForwardingEngine::abort();
}

EngineOp ShmEngine::broadcast(std::vector<at::Tensor>& tensors, const BroadcastOptions& opts) {
  ShmSegment& seg = *segment_;
  // The process group refuses a bad root at the call; the slots are indexed by it.
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < seg.size(), "accl shm: broadcast: invalid "
              "root rank ", opts.rootRank, " for ", seg.size(), " ranks");
  const at::Tensor& t = tensors.at(0);
  const int64_t bytes = t.numel() * t.element_size();
  const int64_t per_chunk = static_cast<int64_t>(seg.slot_bytes());
  TORCH_CHECK(per_chunk > 0, "accl shm: broadcast: the segment has empty slots");
  for (int64_t offset = 0; offset < bytes; offset += per_chunk) {
    const int64_t count = std::min(per_chunk, bytes - offset);
    const int buffer = seg.next_buffer();
    if (seg.rank() == opts.rootRank) {
      std::memcpy(seg.slot(buffer, opts.rootRank), bytes_of(t) + offset, count);
    }
    seg.sync("broadcast");
    if (seg.rank() != opts.rootRank) {
      std::memcpy(bytes_of(t) + offset, seg.slot(buffer, opts.rootRank), count);
    }
  }
  return nullptr;
}

EngineOp ShmEngine::allgather_into_tensor(at::Tensor& output, at::Tensor& input,
                                          const AllgatherOptions& /*opts*/) {
  ShmSegment& seg = *segment_;
  const int64_t bytes = input.numel() * input.element_size();
  const int64_t per_chunk = static_cast<int64_t>(seg.slot_bytes());
  for (int64_t offset = 0; offset < bytes; offset += per_chunk) {
    const int64_t count = std::min(per_chunk, bytes - offset);
    const int buffer = seg.next_buffer();
    std::memcpy(seg.slot(buffer, seg.rank()), bytes_of(input) + offset, count);
    seg.sync("allgather_into_tensor");
    for (int q = 0; q < seg.size(); ++q) {
      std::memcpy(bytes_of(output) + q * bytes + offset, seg.slot(buffer, q), count);
    }
  }
  return nullptr;
}

EngineOp ShmEngine::reduce_scatter_tensor(at::Tensor& output, at::Tensor& input,
                                          const ReduceScatterOptions& opts) {
  ShmSegment& seg = *segment_;
  const int me = seg.rank(), size = seg.size();
  const int64_t elem = output.element_size();
  // One chunk holds `per_chunk` elements of every rank's share.
  const int64_t per_chunk = static_cast<int64_t>(seg.slot_bytes()) / (elem * size);
  if (!reduces_here(opts.reduceOp) || per_chunk == 0) {
    return wrapped().reduce_scatter_tensor(output, input, opts);
  }
  const int64_t n = output.numel();
  for (int64_t offset = 0; offset < n; offset += per_chunk) {
    const int64_t count = std::min(per_chunk, n - offset);
    const int buffer = seg.next_buffer();
    for (int r = 0; r < size; ++r) {
      std::memcpy(seg.slot(buffer, me) + r * count * elem,
                  bytes_of(input) + (r * n + offset) * elem, count * elem);
    }
    seg.sync("reduce_scatter_tensor");
    std::vector<at::Tensor> parts;
    for (int q = 0; q < size; ++q) {
      parts.push_back(view(seg.slot(buffer, q) + me * count * elem, count, output));
    }
    reduce_into(view(bytes_of(output) + offset * elem, count, output), parts, opts.reduceOp);
  }
  return nullptr;
}

} // namespace c10d::accinte
