// Registration form: PyTorch's overrideable fused attention backend.
//
// scaled_dot_product_attention asks a device's `_fused_sdp_choice_stub`
// which backend to run; a DispatchStub entry for PrivateUse1 answers for
// accinte, and the answer `overrideable` routes the call to
// `_scaled_dot_product_fused_attention_overrideable`, a plain operator the
// backend implements (its backward too; PyTorch supplies the derivative
// formula that connects them). `_fused_sdp_choice` is registered as well so
// that torch._fused_sdp_choice on accinte tensors tells what the stub does.
// See Note [accinte fused attention].
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <csrc/aten/native/Attention.h>

namespace at::native {

// LITERALINCLUDE START: ATTENTION REGISTRATION
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &accinte::fused_sdp_choice)

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(accinte::fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable",
         TORCH_FN(accinte::fused_attention_overrideable));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward",
         TORCH_FN(accinte::fused_attention_overrideable_backward));
}
// LITERALINCLUDE END: ATTENTION REGISTRATION

} // namespace at::native
