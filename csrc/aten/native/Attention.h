#pragma once
// accinte's fused scaled dot product attention: PyTorch's overrideable SDPA
// path, computed by the CPU's flash attention kernel as a stream kernel.
// Registration: ../AccInteAttention.cpp. See Note [accinte fused attention].

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>

#include <optional>
#include <tuple>

namespace at::native::accinte {

/// The backend scaled_dot_product_attention takes on accinte
/// (`_fused_sdp_choice`, and the PrivateUse1 `_fused_sdp_choice_stub`):
/// SDPBackend::overrideable where the CPU would take its flash kernel, and
/// the CPU's own choice otherwise (math, e.g. for dropout, which the CPU's
/// flash kernel does not do). Reads metadata only; queues nothing.
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa);

/// `_scaled_dot_product_fused_attention_overrideable`: the output and
/// log-sum-exp of the CPU's `_scaled_dot_product_flash_attention_for_cpu`
/// (queued on the current stream); the varlen and Philox outputs are empty,
/// max_q and max_k the sequence lengths.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
           at::Tensor, at::Tensor>
fused_attention_overrideable(const at::Tensor& query, const at::Tensor& key,
                             const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
                             double dropout_p, bool is_causal, bool return_debug_mask,
                             std::optional<double> scale);

/// `_scaled_dot_product_fused_attention_overrideable_backward`: the CPU's
/// flash attention backward. The attention bias gets no gradient, as with
/// the CPU's flash kernel.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& cum_seq_q,
    const at::Tensor& cum_seq_k, c10::SymInt max_q, c10::SymInt max_k, double dropout_p,
    bool is_causal, const at::Tensor& philox_seed, const at::Tensor& philox_offset,
    std::optional<double> scale);

} // namespace at::native::accinte
