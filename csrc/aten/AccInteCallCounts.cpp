// Test hook: `torch.ops.accinte._call_count(name)` reads a counter of
// native/CallCounts.h. Not a registration form to copy; it adds to the
// accinte namespace the way AccInteNamespaceExtension.cpp shows.
#include <torch/library.h>

#include <csrc/aten/native/CallCounts.h>

namespace at::native::accinte {

// An operator without tensor arguments has no dispatch key to pick a kernel
// by: m.def with a function registers one catch-all kernel, which serves it.
TORCH_LIBRARY_FRAGMENT(accinte, m) {
  m.def("_call_count(str name) -> int", TORCH_FN(call_count));
}

} // namespace at::native::accinte
