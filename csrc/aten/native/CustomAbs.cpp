#include <csrc/aten/native/CustomAbs.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/abs_cpu_dispatch.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sgn.h>
#include <torch/csrc/autograd/custom_function.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace at::native::accinte {
namespace {

at::ScalarType result_type(const at::Tensor& self) {
  return c10::toRealValueType(self.scalar_type());
}

// The operator through the dispatcher, from the dispatch key below the
// caller's (see the guards at the call sites).
at::Tensor call_custom_abs(const at::Tensor& self) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("accinte::custom_abs", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(self);
}

// LITERALINCLUDE START: CUSTOM OP AUTOGRAD
struct CustomAbsFunction : torch::autograd::Function<CustomAbsFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& self) {
    ctx->save_for_backward({self});
    // Below autograd: the next kernel is the device's (or, while tracing,
    // the fake tensor's), never this one again.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_custom_abs(self);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor self = ctx->get_saved_variables()[0];
    if (!grads[0].defined()) {
      return {at::Tensor()};
    }
    return {at::mul(grads[0], at::sgn(self))};
  }
};
// LITERALINCLUDE END: CUSTOM OP AUTOGRAD

} // namespace

// LITERALINCLUDE START: CUSTOM OP KERNEL
at::Tensor custom_abs(const at::Tensor& self) {
  at::Tensor out = at::empty_like(self, self.options().dtype(result_type(self)));
  if (self.numel() == 0) {
    return out;
  }
  // The kernel: the CPU's abs, in place on device memory through CPU aliases
  // (CpuAlias.h), on the stream's worker thread.
  launch_cpu_kernel(
      c10::accinte::getCurrentAccInteStream(self.device().index()),
      [self = cpu_alias(self), out = cpu_alias(out)]() mutable {
        at::cpu::abs_out(out, self);
      }, "accinte::custom_abs");
  return out;
}

at::Tensor custom_abs_meta(const at::Tensor& self) {
  return at::empty_like(self, self.options().dtype(result_type(self)));
}
// LITERALINCLUDE END: CUSTOM OP KERNEL

at::Tensor custom_abs_autograd(const at::Tensor& self) {
  return CustomAbsFunction::apply(self);
}

} // namespace at::native::accinte
