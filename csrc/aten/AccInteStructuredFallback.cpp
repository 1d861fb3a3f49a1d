// The global fallback for the functional and in-place variants of
// structured operators.
//
// A structured operator (`add`, `mse_loss`, `mean`, ...) has one kernel per
// device for its out= overload; its functional and in-place variants default,
// for a backend without kernels of its own, to a CompositeExplicitAutograd-
// NonFunctional wrapper that allocates the output and calls the out=
// overload. Such a default wins over a backend fallback, so on accinte the
// functional call would run the CPU's out= kernel on a preallocated output,
// which is not always the CPU's functional operator: `mse_loss.out` warns
// when handed a 0-dim output, `binary_cross_entropy.out` reduces another
// way. The CPU runs these variants with kernels of their own, so accinte
// registers the global fallback for them by name: the CPU's functional (or
// in-place) kernel then runs, and the engine uses the out= overload only
// where it was shown to give the same bytes (Note [accinte fallback]). The
// same idea as AccInteShadowedComposites.cpp (Note [accinte shadowed
// composites]), for the one composite key that exists only to call out=.
#include <torch/library.h>

#include <csrc/emulation/shims/LowPrecision.h>
#include <csrc/emulation/fallback/Fallback.h>

#include <string>
#include <unordered_set>

namespace at::native::accinte {
namespace {

// Operators with an accinte kernel registered elsewhere, whichever runs
// first: from Python (torch_accinte/accinte/ops.py), in AccInteCudaParity.cpp
// and in AccInteOpFallback.cpp. The library's static registrations run in
// the order its objects are linked, which the unity build reverses unit by
// unit, so the check below for a PrivateUse1 kernel cannot stand in for this
// list: it sees only the registrations that happened to run before.
const std::unordered_set<std::string>& registered_elsewhere() {
  static const std::unordered_set<std::string> names = [] {
    std::unordered_set<std::string> all = {"aten::frac", "aten::sub.Tensor"};
    for (const std::string& name : float_compute_operators()) {
      all.insert(name);
    }
    return all;
  }();
  return names;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name :
       dispatcher.getAllOpNamesForDispatchKey(c10::DispatchKey::CPU)) {
    const auto op = dispatcher.findOp(name);
    if (!op || name.name.rfind("aten::", 0) != 0 ||
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
        // One with a composite default too is AccInteShadowedComposites.cpp's.
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) ||
        op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
        registered_elsewhere().count(name.overload_name.empty()
                                         ? name.name
                                         : name.name + "." + name.overload_name) > 0) {
      continue;
    }
    const std::string qualified =
        name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    m.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&accinte_fallback>());
  }
}

} // namespace
} // namespace at::native::accinte
