// Registration form: overriding a CompositeImplicitAutograd default.
//
// Operators like aten::square have no kernel per device: one
// CompositeImplicitAutograd kernel, written with other operators (square is
// pow(self, 2)), serves every backend and gets its gradient from theirs. A
// backend with a better way registers its own kernel, but for the backend
// key alone that is not enough. The dispatcher fills the autograd key
// (AutogradPrivateUse1) with the composite kernel only while the backend has
// no kernel of its own; once it has one, the autograd key gets PyTorch's
// autograd fallback instead, which knows no derivative for the operator and
// warns at backward that its gradients may be silently wrong.
//
// So the override is registered for both keys. Its code uses differentiable
// operators only, so at AutogradPrivateUse1 it records the gradient the
// composite way (through mul's backward); at PrivateUse1 it serves calls made
// below autograd (torch.inference_mode, other kernels).
#include <torch/library.h>

#include <csrc/aten/native/Square.h>

namespace at::native::accinte {

// LITERALINCLUDE START: COMPOSITE OVERRIDE
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("square", TORCH_FN(square));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("square", TORCH_FN(square));
}
// LITERALINCLUDE END: COMPOSITE OVERRIDE

} // namespace at::native::accinte
