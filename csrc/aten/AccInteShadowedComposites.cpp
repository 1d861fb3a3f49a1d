// Registration form: the CPU's kernel in place of a composite default,
// found from the dispatcher.
//
// Note [accinte shadowed composites]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// For a few operators PyTorch registers, besides the CPU's own kernel, a
// CompositeExplicitAutograd or CompositeImplicitAutograd default for every
// other backend: native_layer_norm, native_group_norm, addr, _stack,
// all.dims, ... A backend without a kernel of its own gets the default, a
// decomposition into other operators: other numerics than the CPU's fused
// kernel (layer_norm differs by 5e-7 in float32), several kernels instead of
// one, and occasionally a failure the fused kernel does not have (group_norm's
// decomposition cannot view a channels-last input). A CompositeImplicitAutograd
// default also fills the AutogradPrivateUse1 key, so even calls made under
// autograd decompose (silu_backward in a double backward).
//
// accinte runs the CPU's kernels, so it routes every such operator to the
// global fallback by name: the CPU's kernel, asynchronously, with the CPU's
// bits. The list is not written down: at load, every operator the dispatcher
// knows is checked for a CPU kernel, a composite default and no accinte
// kernel, so an operator a new PyTorch adds is routed too
// (tests/test_shadowed_composites.py lists them again from the dispatcher and
// checks each against the CPU). A registration for PrivateUse1 also takes the
// composite kernel off AutogradPrivateUse1 (see AccInteCompositeOverride.cpp);
// that is what the CPU has: these operators' gradients come from autograd
// formulas, or they have none on the CPU either.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/irange.h>

#include <csrc/emulation/fallback/Fallback.h>

#include <vector>

namespace at::native::accinte {
namespace {

// LITERALINCLUDE START: SHADOWED COMPOSITES
/// Whether `op` has a kernel for the CPU and a composite default that
/// accinte would get in its place.
bool is_shadowed_composite(const c10::OperatorHandle& op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) &&
         (op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd));
}

/// Routes every shadowed composite to the global fallback, for the life of
/// the library (the handles unregister when it unloads).
struct ShadowedCompositesRegistration {
  ShadowedCompositesRegistration() {
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      const auto op = dispatcher.findOp(name);
      if (!op || !op->hasSchema() || !is_shadowed_composite(*op)) {
        continue;
      }
      handles.push_back(dispatcher.registerImpl(
          name, c10::DispatchKey::PrivateUse1,
          c10::KernelFunction::makeFromBoxedFunction<&accinte_fallback>(), std::nullopt,
          nullptr, "accinte: the CPU's kernel over a composite default "
                   "(csrc/aten/AccInteShadowedComposites.cpp)"));
    }
  }

  std::vector<c10::RegistrationHandleRAII> handles;
};

const ShadowedCompositesRegistration registration;
// LITERALINCLUDE END: SHADOWED COMPOSITES

} // namespace
} // namespace at::native::accinte
