// Registration form: a per-operator fallback.
//
// A boxed kernel receives any operator's arguments on a stack of IValues, so
// one function can serve many operators: that is how the global fallback
// (AccInteMinimal.cpp) covers every operator without a kernel. The same
// boxed function can also be registered for one operator by name. A backend
// does that to route an operator explicitly to generic code: when its own
// kernel for the operator is not ready, when a kernel PyTorch would pick
// (a CompositeExplicitAutograd one, say) does not suit the device, or, as
// here, to run extra code around the generic path for one operator.
//
// Without this registration sub.Tensor takes PyTorch's structured default
// kernel, which allocates the output and calls sub.out, which reaches the
// global fallback; registering sub.Tensor by name sends it to the fallback
// directly (whose Meta cache keeps it asynchronous) and lets the test hook
// count its calls.
#include <torch/library.h>

#include <csrc/aten/native/CallCounts.h>
#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {
namespace {

// LITERALINCLUDE START: FALLBACK PER OPERATOR
void sub_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  count_call("sub.Tensor fallback"); // test hook, see native/CallCounts.h
  accinte_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sub.Tensor", torch::CppFunction::makeFromBoxedFunction<&sub_fallback>());
}
// LITERALINCLUDE END: FALLBACK PER OPERATOR

} // namespace
} // namespace at::native::accinte
