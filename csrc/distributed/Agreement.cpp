#include <csrc/distributed/Agreement.h>

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <string>

namespace c10d::accinte {

std::optional<Fingerprint> fingerprint_of(OpType type, const std::vector<at::Tensor>& tensors) {
  switch (type) {
    case OpType::SEND:
    case OpType::RECV:
    case OpType::RECVANYSOURCE:
    case OpType::COALESCED:
      return std::nullopt;
    default:
      break;
  }
  if (tensors.empty()) { // a barrier
    return Fingerprint{static_cast<int64_t>(type), -1, -1};
  }
  const bool sizes_may_differ = type == OpType::GATHER || type == OpType::SCATTER ||
                                type == OpType::ALLTOALL || type == OpType::ALLTOALL_BASE;
  const at::Tensor& t = tensors.front();
  return Fingerprint{static_cast<int64_t>(type), static_cast<int64_t>(t.scalar_type()),
                     sizes_may_differ ? -1 : t.numel()};
}

namespace {

std::string describe(const int64_t* row) {
  std::string text = opTypeToString(static_cast<OpType>(row[0]));
  if (row[1] >= 0) {
    text += c10::str(" of ", static_cast<at::ScalarType>(row[1]));
  }
  if (row[2] >= 0) {
    text += c10::str(", ", row[2], " elements");
  }
  return text;
}

} // namespace

// LITERALINCLUDE START: ACCL AGREEMENT CHECK
void check_agreement(CollectiveEngine& engine, int size, const Fingerprint& mine) {
  constexpr int64_t kWords = 3;
  at::Tensor local = at::empty({kWords}, at::kLong);
  local[0] = mine.op;
  local[1] = mine.dtype;
  local[2] = mine.numel;
  at::Tensor all = at::empty({size * kWords}, at::kLong);
  if (EngineOp op = engine.allgather_into_tensor(all, local, AllgatherOptions())) {
    op->wait();
  }
  const int64_t* rows = all.const_data_ptr<int64_t>();
  bool agree = true;
  for (int r = 1; r < size && agree; ++r) {
    agree = std::equal(rows, rows + kWords, rows + r * kWords);
  }
  if (agree) {
    return;
  }
  std::string calls;
  for (int r = 0; r < size; ++r) {
    calls += c10::str(r == 0 ? "" : "; ", "rank ", r, ": ", describe(rows + r * kWords));
  }
  TORCH_CHECK(false, "the ranks did not call the same collective on tensors of the same dtype "
              "and size (", calls, "); nothing was moved");
}
// LITERALINCLUDE END: ACCL AGREEMENT CHECK

} // namespace c10d::accinte
