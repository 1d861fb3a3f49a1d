// Note [custom Function returning a view]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An operator whose schema says its output aliases its input (Tensor(a) ->
// Tensor(a)) must return a tensor that autograd knows is a view: one that
// shares the input's version counter and records its base, so that writing
// into either is seen by the other's gradient bookkeeping. Three kernels
// cooperate, one per layer of the dispatcher:
//
//   AutogradPrivateUse1  Function::apply: runs forward without grad mode, then
//                        gives the output the Function's backward. An output
//                        that is a view gets the creation meta
//                        IN_CUSTOM_FUNCTION: autograd then refuses in-place
//                        writes to it while grad is recorded (they would
//                        bypass the custom backward) and allows them under
//                        no_grad.
//   ADInplaceOrView      PyTorch's autogradNotImplementedInplaceOrViewFallback:
//                        makes the output a view of the input the schema
//                        names, whatever kernel produced it.
//   PrivateUse1          the device kernel: a tensor over the same memory,
//                        with no autograd metadata (a kernel that made the
//                        alias with an ATen view op would get a view from
//                        that op's own ADInplaceOrView kernel, but only by
//                        accident of how it was written).
//
// forward therefore dispatches with only the autograd keys excluded
// (AutoDispatchBelowAutograd), so that the ADInplaceOrView kernel runs.
#include <csrc/aten/native/AliasingFunction.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>

namespace at::native::accinte {
namespace {

at::Tensor call_custom_autograd_fn_aliasing(const at::Tensor& self) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("accinte::custom_autograd_fn_aliasing", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(self);
}

// LITERALINCLUDE START: AUTOGRAD FUNCTION ALIASING
struct AliasingFunction : torch::autograd::Function<AliasingFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* /*ctx*/, const at::Tensor& self) {
    at::AutoDispatchBelowAutograd below_autograd; // keeps ADInplaceOrView, see the Note
    return call_custom_autograd_fn_aliasing(self);
  }

  // The output is self itself, element for element: its gradient is self's.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* /*ctx*/,
                                                 torch::autograd::variable_list grads) {
    return {grads[0]};
  }
};
// LITERALINCLUDE END: AUTOGRAD FUNCTION ALIASING

} // namespace

at::Tensor custom_autograd_fn_aliasing(const at::Tensor& self) {
  // A new tensor over self's storage, with self's layout, built directly as
  // a device kernel would: no autograd metadata at all. Making it a view is
  // the ADInplaceOrView kernel's job (see the Note).
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::TensorImpl::VIEW, c10::Storage(self.storage()), self.key_set(), self.dtype());
  impl->set_sizes_and_strides(self.sizes(), self.strides(), self.storage_offset());
  at::Tensor alias(std::move(impl));
  alias._set_conj(self.is_conj());
  alias._set_neg(self.is_neg());
  return alias;
}

at::Tensor custom_autograd_fn_aliasing_autograd(const at::Tensor& self) {
  return AliasingFunction::apply(self);
}

} // namespace at::native::accinte
