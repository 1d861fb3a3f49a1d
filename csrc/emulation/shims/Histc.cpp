// Note [accinte CUDA parity]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Libraries take their GPU code paths on any accelerator, and those paths use
// what CUDA accepts: transformers' Mixtral mixture-of-experts counts tokens
// per expert with torch.histc on integer expert ids. The CPU's kernel refuses
// integers ("histogram_cpu" not implemented for 'Int'), so running the CPU's
// kernel, as the fallback does, would make accinte refuse what CUDA runs.
// For such capabilities accinte has kernels of its own that compute what
// CUDA computes, written with other operators (so they stay asynchronous);
// every other dtype still runs the CPU's kernel.
#include <csrc/emulation/shims/Histc.h>

#include <ATen/Dispatch_v2.h>
#include <ATen/Functions.h>

#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {
namespace {

// LITERALINCLUDE START: CUDA PARITY HISTC
// CUDA's integer histc: bin = (x - min) * bins / (max - min) in int64
// arithmetic, the last bin closed, values outside [min, max] ignored; min ==
// max means the data's range (a synchronisation, as on CUDA).
at::Tensor integer_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                         const at::Scalar& max) {
  TORCH_CHECK(bins > 0, "bins must be > 0");
  // min and max in the input's dtype, as CUDA converts them.
  const auto as_input = [&](const at::Scalar& s) {
    return at::scalar_tensor(s, at::kLong).to(self.scalar_type()).item<int64_t>();
  };
  int64_t low = as_input(min);
  int64_t high = as_input(max);
  if (low == high && self.numel() > 0) {
    low = self.min().item<int64_t>();
    high = self.max().item<int64_t>();
  }
  if (low == high) {
    low -= 1;
    high += 1;
  }
  TORCH_CHECK(low < high, "max must be larger than min");
  const at::Tensor x = self.reshape(-1).to(at::kLong);
  const at::Tensor in_range = x.ge(low).logical_and_(x.le(high));
  // An extra bin collects what falls outside the range; it is dropped.
  const at::Tensor bin = x.sub(low).mul_(bins).div_(high - low, "trunc").clamp_max_(bins - 1)
                             .masked_fill_(in_range.logical_not(), bins);
  at::Tensor counts = at::zeros({bins + 1}, x.options());
  counts.scatter_add_(0, bin, at::ones_like(bin));
  return counts.narrow(0, 0, bins).to(self.scalar_type());
}
// LITERALINCLUDE END: CUDA PARITY HISTC

} // namespace

void histc_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  const at::Tensor self = (*stack)[stack->size() - num_args].toTensor();
  if (!c10::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    accinte_fallback(op, stack);
    return;
  }
  // CUDA's integer dtypes: uint16, uint32 and uint64 are refused there at
  // the call, with this message.
  AT_DISPATCH_V2(self.scalar_type(), "histc", AT_WRAP([&] {}), AT_EXPAND(AT_INTEGRAL_TYPES));
  const int64_t bins = (*stack)[stack->size() - 3].toInt();
  const at::Scalar min = (*stack)[stack->size() - 2].toScalar();
  const at::Scalar max = (*stack)[stack->size() - 1].toScalar();
  at::Tensor result = integer_histc(self, bins, min, max);
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, std::move(result));
}

} // namespace at::native::accinte
