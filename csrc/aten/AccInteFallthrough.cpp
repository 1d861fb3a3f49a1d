// Registration form: a fallthrough kernel.
//
// A fallthrough registered for (operator, dispatch key) makes the dispatcher
// skip that key for that operator, as if the key were not in the tensors'
// key set, and go on to the next one. It is how a backend says "this layer
// has nothing to do for this operator on my device".
//
// Here the layers are the math-bit keys. A tensor with its conjugate bit set
// (x.conj()) carries the Conjugate key, whose global fallback materialises
// the conjugation before calling the operator. accinte's _copy_from honours
// the conjugate and negative bits itself (the CPU copy it runs resolves
// them), and materialising them would be a copy, that is a _copy_from, which
// would come back here forever. So both keys fall through for the two copy
// operators.
#include <torch/library.h>

namespace at::native::accinte {

// LITERALINCLUDE START: FALLTHROUGH
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
// LITERALINCLUDE END: FALLTHROUGH

} // namespace at::native::accinte
