// Note [accinte fused attention]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// F.scaled_dot_product_attention is a CompositeImplicitAutograd operator
// that asks the device which backend to take (`_fused_sdp_choice_stub`) and
// calls it. A device without an answer gets the math path: a dozen kernels
// (matmul, softmax, masking), other numerics than the CPU, which runs one
// fused flash attention kernel. For out-of-tree devices PyTorch offers the
// overrideable backend: the stub answers SDPBackend::overrideable and the
// device implements `_scaled_dot_product_fused_attention_overrideable` and
// its backward, whose derivative formula PyTorch supplies.
//
// accinte answers overrideable exactly where the CPU would take its flash
// kernel (the CPU's own selection, run on the same metadata), and runs the
// CPU's `_scaled_dot_product_flash_attention_for_cpu` and its backward
// through the fallback: one asynchronous stream kernel each, the CPU's bits.
// Where the CPU takes the math path (dropout, inputs its flash kernel
// refuses), so does accinte; the math path's dropout draws from accinte's
// generator (Note [accinte random numbers]).
#include <csrc/aten/native/Attention.h>

#include <ATen/Functions.h>
#include <ATen/SDPBackend.h>
#include <ATen/ops/_fused_sdp_choice_ops.h>

namespace at::native::accinte {

// LITERALINCLUDE START: ATTENTION CHOICE
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  // The CPU's selection reads shapes, strides, dtypes and requires_grad only.
  const int64_t cpu_choice = at::_ops::_fused_sdp_choice::redispatch(
      c10::DispatchKeySet(c10::DispatchKey::CPU), query, key, value, attn_mask, dropout_p,
      is_causal, scale, enable_gqa);
  return cpu_choice == static_cast<int64_t>(at::SDPBackend::flash_attention)
             ? static_cast<int64_t>(at::SDPBackend::overrideable)
             : cpu_choice;
}
// LITERALINCLUDE END: ATTENTION CHOICE

namespace {
// `value` in the layout `at::empty_like(layout)` has: PyTorch's Meta kernels
// for the overrideable attention declare their outputs so (outputs like the
// query, gradients like their inputs), and compiled code asserts those
// strides. The CPU's kernel may lay its results out otherwise; a copy
// (queued, like any kernel) is made only then.
at::Tensor laid_out_like(const at::Tensor& layout, const at::Tensor& value) {
  if (!value.defined() || layout.sizes() != value.sizes()) {
    return value;
  }
  at::Tensor result = at::empty_like(layout, value.options());
  if (result.strides() == value.strides()) {
    return value;
  }
  result.copy_(value);
  return result;
}
} // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
           at::Tensor, at::Tensor>
fused_attention_overrideable(const at::Tensor& query, const at::Tensor& key,
                             const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
                             double dropout_p, bool is_causal, bool /*return_debug_mask*/,
                             std::optional<double> scale) {
  auto [out, logsumexp] = at::_scaled_dot_product_flash_attention_for_cpu(
      query, key, value, dropout_p, is_causal, attn_bias, scale);
  const at::Tensor none = at::empty({0}, query.options().dtype(at::kLong));
  // 0-dim, as the Meta kernel declares the (unused) dropout seed and offset.
  const at::Tensor seed_or_offset = at::empty({}, query.options().dtype(at::kLong));
  // The Meta kernel declares logsumexp contiguous (B, H, L).
  return {laid_out_like(query, out), logsumexp.contiguous(), none, none, query.sym_size(-2),
          key.sym_size(-2), seed_or_offset, seed_or_offset, at::empty({0}, query.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> /*grad_input_mask*/,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/,
    const at::Tensor& /*cum_seq_k*/, c10::SymInt /*max_q*/, c10::SymInt /*max_k*/,
    double dropout_p, bool is_causal, const at::Tensor& /*philox_seed*/,
    const at::Tensor& /*philox_offset*/, std::optional<double> scale) {
  const std::optional<at::Tensor> mask =
      attn_bias.defined() ? std::optional<at::Tensor>(attn_bias) : std::nullopt;
  auto [grad_query, grad_key, grad_value] =
      at::_scaled_dot_product_flash_attention_for_cpu_backward(
          grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, mask, scale);
  return {laid_out_like(query, grad_query), laid_out_like(key, grad_key),
          laid_out_like(value, grad_value), at::Tensor()};
}

} // namespace at::native::accinte
