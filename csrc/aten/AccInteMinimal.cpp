// Registration of the minimal operator set and of the global fallback for the
// PrivateUse1 dispatch key. The kernels live in native/.
#include <torch/library.h>

#include <csrc/emulation/fallback/Fallback.h>
#include <csrc/aten/native/Minimal.h>

namespace at::native::accinte {

// LITERALINCLUDE START: TORCH_LIBRARY_IMPL
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("_reshape_alias", TORCH_FN(_reshape_alias));
  m.impl("_copy_from", TORCH_FN(_copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(_copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(_local_scalar_dense));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_Tensor));
  m.impl("set_.source_Storage", TORCH_FN(set_source_Storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_source_Storage_storage_offset));
  m.impl("view", TORCH_FN(view));
}
// LITERALINCLUDE END: TORCH_LIBRARY_IMPL

// LITERALINCLUDE START: FALLBACK REGISTRATION
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&accinte_fallback>());
}
// LITERALINCLUDE END: FALLBACK REGISTRATION

} // namespace at::native::accinte
