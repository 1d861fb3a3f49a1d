// Note [accinte eigvals refuses non-finite input]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.linalg.eig refuses a matrix holding an inf or a NaN before LAPACK's
// geev sees it ("input tensor should not contain infs or NaNs"), but
// linalg.eigvals of a tensor without grad goes to _linalg_eigvals, whose CPU
// kernel has no such check, and MKL's geev then crashes the process
// (pytorch#185247, open). accinte runs the CPU's kernel, so it would crash
// too; a call that reaches Python must raise instead. The check is made here,
// at the call (eig and eigvals run synchronously on accinte, as on CUDA,
// which computes them on the host), with linalg.eig's message, and the call
// then goes to the fallback.
#include <csrc/emulation/shims/EigvalsFinite.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/isfinite.h>

#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {

void eigvals_finite_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t first = stack->size() - op.schema().arguments().size();
  const c10::IValue& self = (*stack)[first]; // `self`, the first argument of both
  // Only LAPACK's dtypes: the CPU's kernel refuses the others in its own words.
  const auto lapack_dtype = [](c10::ScalarType t) {
    return t == c10::kFloat || t == c10::kDouble || t == c10::kComplexFloat ||
           t == c10::kComplexDouble;
  };
  if (self.isTensor() && self.toTensor().numel() > 0 &&
      lapack_dtype(self.toTensor().scalar_type())) {
    TORCH_CHECK(at::isfinite(self.toTensor()).all().item<bool>(),
                "torch.linalg.eigvals: input tensor should not contain infs or NaNs.");
  }
  accinte_fallback(op, stack);
}

const char* const* eigvals_finite_operators() {
  static const char* const names[] = {"_linalg_eigvals", "linalg_eigvals.out", nullptr};
  return names;
}

} // namespace at::native::accinte
