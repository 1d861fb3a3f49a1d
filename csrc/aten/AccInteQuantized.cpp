// Registration form: a fallback for the quantized key, and quantizing
// operators routed to it by name.
//
// Quantized tensors dispatch to their own key, QuantizedPrivateUse1, which
// the dense global fallback does not cover; a boxed fallback registered for
// it serves every operator on them (see Note [accinte quantized tensors]).
// Operators that make a quantized tensor from dense ones dispatch to
// PrivateUse1, where the dense fallback would build a dense result, so they
// take the quantized-aware fallback by name. Copies have kernels of their
// own for both sides of the host boundary.
#include <torch/library.h>

#include <string>

#include <csrc/aten/native/QuantizedCopy.h>
#include <csrc/emulation/fallback/LayoutFallback.h>

namespace at::native::accinte {

// LITERALINCLUDE START: QUANTIZED REGISTRATION
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
}

TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  m.impl("copy_", TORCH_FN(quantized_copy_));
  m.impl("_to_copy", TORCH_FN(quantized_to_copy));
  // Explicit composite defaults fill QuantizedPrivateUse1 as well and would
  // win over the fallback: clone's allocates with a quantizer it cannot
  // know, add's structured one asserts inside PyTorch. The fallback gives
  // the CPU's behaviour instead: its result, or NotImplementedError.
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    const auto op = dispatcher.findOp(name);
    if (!op || name.name.rfind("aten::", 0) != 0 ||
        op->hasKernelForDispatchKey(c10::DispatchKey::QuantizedPrivateUse1) ||
        !(op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional))) {
      continue;
    }
    const std::string qualified =
        name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    m.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {"quantize_per_tensor", "quantize_per_tensor.tensor_qparams", "quantize_per_tensor.tensors",
        "quantize_per_channel", "quantize_per_tensor_dynamic", "_empty_affine_quantized",
        "_empty_per_channel_affine_quantized", "_make_per_tensor_quantized_tensor",
        "_make_per_channel_quantized_tensor"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&layout_fallback>());
  }
}
// LITERALINCLUDE END: QUANTIZED REGISTRATION

} // namespace at::native::accinte
