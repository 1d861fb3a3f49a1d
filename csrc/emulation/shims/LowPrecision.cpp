// Note [accinte low precision as CUDA]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Some CPU kernels have no half or bfloat16 instance where CUDA's have one,
// and libraries call them in those dtypes on an accelerator: diffusers' video
// autoencoders pool with avg_pool3d in bfloat16 (autoencoder_vidtok.py casts
// to float only when the device is "cpu"), transformers' SAM2 video tracker
// resizes masks with antialias. CUDA's kernels for these operators read the
// half or bfloat16 input, compute in float (CUDA's accumulate type) and round
// the result once to the input's dtype. accinte does the same with the CPU's
// float kernel: convert, run it as the fallback does, convert back.
//
// Whose numerics: avg_pool3d forward sums each window in float in the order
// CUDA's kernel does and divides once, so it gives CUDA's bits; its backward
// gives CUDA's bits where windows do not overlap (CUDA writes each gradient
// once) and a more exact result where they do (CUDA adds into the half
// gradient with atomics, in no fixed order). The antialiased resizes give the
// CPU's float result rounded once; CUDA's kernel also rounds its filter
// weights and its horizontal pass to the input's dtype, so the two agree to
// the rounding of the dtype, not bit for bit.
#include <csrc/emulation/shims/LowPrecision.h>

#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {
namespace {

bool is_low_precision(const at::Tensor& t) {
  return t.defined() &&
         (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16);
}

} // namespace

const std::vector<std::string>& float_compute_operators() {
  static const std::vector<std::string> names = {
      "aten::avg_pool3d",
      "aten::avg_pool3d_backward",
      "aten::_upsample_bilinear2d_aa",
      "aten::_upsample_bilinear2d_aa_backward",
      "aten::_upsample_bicubic2d_aa",
      "aten::_upsample_bicubic2d_aa_backward",
  };
  return names;
}

// LITERALINCLUDE START: CUDA PARITY FLOAT COMPUTE
void float_compute_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // The operators listed above are functional: no argument is written.
  const size_t first_arg = stack->size() - op.schema().arguments().size();
  std::optional<c10::ScalarType> low;
  for (size_t i = first_arg; i < stack->size() && !low; ++i) {
    const c10::IValue& arg = (*stack)[i];
    if (arg.isTensor() && is_low_precision(arg.toTensor())) {
      low = arg.toTensor().scalar_type();
    }
  }
  if (!low) {
    accinte_fallback(op, stack);
    return;
  }
  // One low-precision dtype per call: its results are rounded back to it.
  for (size_t i = first_arg; i < stack->size(); ++i) {
    const c10::IValue& arg = (*stack)[i];
    TORCH_CHECK(!arg.isTensor() || !is_low_precision(arg.toTensor()) ||
                    arg.toTensor().scalar_type() == *low,
                op.schema().name(), ": expected every Half or BFloat16 tensor argument to have "
                "one dtype, got ", *low, " and ", arg.toTensor().scalar_type());
  }
  for (size_t i = first_arg; i < stack->size(); ++i) {
    c10::IValue& arg = (*stack)[i];
    if (arg.isTensor() && is_low_precision(arg.toTensor())) {
      arg = arg.toTensor().to(at::kFloat);
    }
  }
  accinte_fallback(op, stack); // the CPU's float kernel, queued on the stream
  const size_t first_return = stack->size() - op.schema().returns().size();
  for (size_t i = first_return; i < stack->size(); ++i) {
    c10::IValue& ret = (*stack)[i];
    if (ret.isTensor()) {
      ret = ret.toTensor().to(*low);
    }
  }
}
// LITERALINCLUDE END: CUDA PARITY FLOAT COMPUTE

} // namespace at::native::accinte
