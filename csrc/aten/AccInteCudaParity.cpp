// Registration: accinte kernels for what CUDA accepts and the CPU's kernel
// refuses, which libraries' accelerator code paths rely on. Kernels for
// operators the CPU has handle the cases it refuses and hand the others to
// the fallback; operators only CUDA has get kernels of their own. See Note
// [accinte CUDA parity]; the candidates and why each is or is not here:
// tests/conformance/cuda_capabilities.py.
#include <torch/library.h>

#include <csrc/emulation/shims/EigvalsFinite.h>
#include <csrc/emulation/shims/Histc.h>
#include <csrc/emulation/shims/LowPrecision.h>
#include <csrc/emulation/shims/NormalStd.h>
#include <csrc/aten/native/SyncBatchNorm.h>

namespace at::native::accinte {

// LITERALINCLUDE START: CUDA PARITY REGISTRATION
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", torch::CppFunction::makeFromBoxedFunction<&histc_kernel>());
  // Half and bfloat16 computed in float, as CUDA does.
  for (const std::string& name : float_compute_operators()) {
    m.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&float_compute_kernel>());
  }
  // A negative element of a tensor std refused at the call, where CUDA's
  // .item() waits for the check (Note [accinte normal checks std at the call]).
  for (const char* const* name = normal_tensor_std_overloads(); *name != nullptr; ++name) {
    m.impl(*name, torch::CppFunction::makeFromBoxedFunction<&normal_tensor_std_kernel>());
  }
  // An inf or NaN refused where the CPU's eigvals kernel would crash (Note
  // [accinte eigvals refuses non-finite input]).
  for (const char* const* name = eigvals_finite_operators(); *name != nullptr; ++name) {
    m.impl(*name, torch::CppFunction::makeFromBoxedFunction<&eigvals_finite_kernel>());
  }
  // nn.SyncBatchNorm.
  m.impl("batch_norm_stats", TORCH_FN(batch_norm_stats));
  m.impl("batch_norm_gather_stats", TORCH_FN(batch_norm_gather_stats));
  m.impl("batch_norm_gather_stats_with_counts", TORCH_FN(batch_norm_gather_stats_with_counts));
  m.impl("batch_norm_elemt", TORCH_FN(batch_norm_elemt));
  m.impl("batch_norm_elemt.out", TORCH_FN(batch_norm_elemt_out));
  m.impl("batch_norm_backward_reduce", TORCH_FN(batch_norm_backward_reduce));
  m.impl("batch_norm_backward_elemt", TORCH_FN(batch_norm_backward_elemt));
}
// LITERALINCLUDE END: CUDA PARITY REGISTRATION

} // namespace at::native::accinte
