// Registration form: a DispatchStub kernel.
//
// Many ATen operators are written once for every device: the device-generic
// native function (here at::native::abs_out) checks its arguments, builds a
// TensorIterator and calls a DispatchStub (abs_stub), which picks the
// element loop of the iterator's device. A backend then supplies only that
// loop, with REGISTER_PRIVATEUSE1_DISPATCH, and reuses the operator's own
// argument handling, type rules and output allocation.
//
// The stub is reached only if the operator's PrivateUse1 kernel is that
// device-generic function. PyTorch registers abs.out's for CPU, CUDA and a few
// others, not for PrivateUse1 (left alone, abs.out would run through the
// global fallback and the CPU's stub), so the backend registers it too.
// abs and abs_ are CompositeExplicitAutograd: both call abs.out, and so reach
// this stub as well; so does abs of a complex tensor, which computes into a
// complex temporary and copies its real part out.
#include <torch/library.h>

#include <ATen/native/UnaryOps.h>
#include <ATen/ops/abs_native.h>

#include <csrc/aten/native/AbsKernel.h>

namespace at::native::accinte {

// LITERALINCLUDE START: DISPATCH STUB
REGISTER_PRIVATEUSE1_DISPATCH(abs_stub, &abs_kernel)

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("abs.out", TORCH_FN(at::native::abs_out));
}
// LITERALINCLUDE END: DISPATCH STUB

} // namespace at::native::accinte
