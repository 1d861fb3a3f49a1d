// Registration: accinte kernels for what CUDA accepts and the CPU's kernel
// refuses, which libraries' accelerator code paths rely on. Each kernel
// handles the cases the CPU refuses and hands the others to the fallback.
// See Note [accinte CUDA parity].
#include <torch/library.h>

#include <csrc/aten/native/Histc.h>

namespace at::native::accinte {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", torch::CppFunction::makeFromBoxedFunction<&histc_kernel>());
}

} // namespace at::native::accinte
