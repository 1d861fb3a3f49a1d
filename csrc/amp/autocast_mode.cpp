// The autocast policy of accinte: what torch.autocast("accinte") does to each
// operator. Named after ATen's autocast_mode.cpp, which holds CUDA's policy.
//
// Note [How autocast reaches a backend]
// torch.autocast("accinte") adds the AutocastPrivateUse1 key to the thread's
// dispatch key set. Every operator called on accinte tensors then dispatches
// to that key first:
//   - operators registered below run a wrapper (at::autocast::WrapFunction)
//     that casts floating-point accinte arguments as the policy says, excludes
//     the autocast key and redispatches, so the backend kernel sees the cast
//     inputs;
//   - every other operator falls through to the next key unchanged (the
//     fallthrough on `_` below). Without it, any operator without a policy
//     would fail inside an autocast region with "Could not run ... with
//     arguments from the 'Autocastaccinte' backend".
// The lower-precision dtype is the one the user passed to torch.autocast
// (float16 or bfloat16, see torch.accinte.amp.get_amp_supported_dtype).
//
// Note [accinte autocast policy]
// The lists below follow the reasoning of CUDA's policy, applied to what an
// accelerator with fast lower-precision matrix units gains and risks:
//   lower_precision_fp  matrix products and convolutions: they dominate the
//                       time, are accurate enough with a float32 accumulator,
//                       and halve the memory their saved inputs take.
//   fp32                operators whose result loses accuracy or overflows in
//                       half precision: exponentials, logarithms, powers,
//                       reductions over many elements, norms, losses, softmax.
//                       Those with an optional output dtype (fp32_set_opt_dtype)
//                       keep a dtype the caller chose; norm's overloads without
//                       a dtype are redispatched to one with float32 appended
//                       (fp32_append_dtype).
//   promote             operators mixing several inputs elementwise, which
//                       need one common dtype: the widest floating dtype among
//                       the inputs.
//   refused             operators that are numerically unsafe in half
//                       precision and have a safe replacement (see
//                       binary_cross_entropy_refused).
// ATen/autocast_mode.h offers CUDA's lists as AT_FORALL_* macros. They are
// spelled out here instead, because a vendor's list is a statement about its
// own hardware and is edited line by line.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace at::autocast::accinte {
namespace {

// LITERALINCLUDE START: AMP REFUSED KERNEL
/// Refuses binary_cross_entropy under autocast. Its input is a probability
/// that usually comes out of a sigmoid; in half precision the sigmoid
/// saturates to exactly 0 or 1 and the loss's log becomes -inf.
at::Tensor binary_cross_entropy_refused(const at::Tensor&, const at::Tensor&,
                                        const std::optional<at::Tensor>&, int64_t) {
  // PyTorch's own wording for CUDA and the CPU, which code and tests match on.
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast.\nMany models use a sigmoid layer right before the binary cross "
              "entropy layer.\nIn this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\nor "
              "torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits "
              "are\nsafe to autocast.");
}
// LITERALINCLUDE END: AMP REFUSED KERNEL

} // namespace

// See Note [How autocast reaches a backend].
// LITERALINCLUDE START: AMP FALLTHROUGH
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}
// LITERALINCLUDE END: AMP FALLTHROUGH

// See Note [accinte autocast policy].
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // LITERALINCLUDE START: AMP LOWER PRECISION
  // ---- lower_precision_fp: matrix products ----
  KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(mv, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(bmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmv, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addr, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(baddbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linear, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(einsum, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(chain_matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linalg_multi_dot, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linalg_vecdot, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(scaled_dot_product_attention, lower_precision_fp)
  // ---- lower_precision_fp: convolutions ----
  KERNEL_PRIVATEUSEONE(conv1d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv1d, padding, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv2d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv2d, padding, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv3d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv3d, padding, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv_tbc, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv_transpose1d, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv_transpose2d, input, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv_transpose3d, input, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(convolution, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(_convolution, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(_convolution, deprecated, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(prelu, lower_precision_fp)
  // ---- lower_precision_fp: recurrent cells (a product and a pointwise tail) ----
  KERNEL_PRIVATEUSEONE(lstm_cell, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(gru_cell, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(rnn_tanh_cell, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(rnn_relu_cell, lower_precision_fp)
  // LITERALINCLUDE END: AMP LOWER PRECISION

  // LITERALINCLUDE START: AMP FP32
  // ---- fp32: pointwise functions that overflow or lose accuracy ----
  KERNEL_PRIVATEUSEONE(exp, fp32)
  KERNEL_PRIVATEUSEONE(expm1, fp32)
  KERNEL_PRIVATEUSEONE(log, fp32)
  KERNEL_PRIVATEUSEONE(log2, fp32)
  KERNEL_PRIVATEUSEONE(log10, fp32)
  KERNEL_PRIVATEUSEONE(log1p, fp32)
  KERNEL_PRIVATEUSEONE(pow, Tensor_Scalar, fp32)
  KERNEL_PRIVATEUSEONE(pow, Tensor_Tensor, fp32)
  KERNEL_PRIVATEUSEONE(pow, Scalar, fp32)
  KERNEL_PRIVATEUSEONE(reciprocal, fp32)
  KERNEL_PRIVATEUSEONE(rsqrt, fp32)
  KERNEL_PRIVATEUSEONE(acos, fp32)
  KERNEL_PRIVATEUSEONE(asin, fp32)
  KERNEL_PRIVATEUSEONE(cosh, fp32)
  KERNEL_PRIVATEUSEONE(sinh, fp32)
  KERNEL_PRIVATEUSEONE(tan, fp32)
  KERNEL_PRIVATEUSEONE(erfinv, fp32)
  KERNEL_PRIVATEUSEONE(softplus, fp32)
  KERNEL_PRIVATEUSEONE(logsumexp, fp32)
  // ---- fp32: normalisations and distances ----
  KERNEL_PRIVATEUSEONE(layer_norm, fp32)
  KERNEL_PRIVATEUSEONE(native_layer_norm, fp32)
  KERNEL_PRIVATEUSEONE(rms_norm, fp32)
  KERNEL_PRIVATEUSEONE(group_norm, fp32)
  KERNEL_PRIVATEUSEONE(frobenius_norm, dim, fp32)
  KERNEL_PRIVATEUSEONE(nuclear_norm, fp32)
  KERNEL_PRIVATEUSEONE(nuclear_norm, dim, fp32)
  KERNEL_PRIVATEUSEONE(renorm, fp32)
  KERNEL_PRIVATEUSEONE(cosine_similarity, fp32)
  KERNEL_PRIVATEUSEONE(dist, fp32)
  KERNEL_PRIVATEUSEONE(pdist, fp32)
  KERNEL_PRIVATEUSEONE(cdist, fp32)
  // ---- fp32: losses ----
  KERNEL_PRIVATEUSEONE(mse_loss, fp32)
  KERNEL_PRIVATEUSEONE(l1_loss, fp32)
  KERNEL_PRIVATEUSEONE(smooth_l1_loss, fp32)
  KERNEL_PRIVATEUSEONE(huber_loss, fp32)
  KERNEL_PRIVATEUSEONE(nll_loss, fp32)
  KERNEL_PRIVATEUSEONE(nll_loss2d, fp32)
  KERNEL_PRIVATEUSEONE(cross_entropy_loss, fp32)
  KERNEL_PRIVATEUSEONE(binary_cross_entropy_with_logits, fp32)
  KERNEL_PRIVATEUSEONE(kl_div, fp32)
  KERNEL_PRIVATEUSEONE(poisson_nll_loss, fp32)
  KERNEL_PRIVATEUSEONE(cosine_embedding_loss, fp32)
  KERNEL_PRIVATEUSEONE(hinge_embedding_loss, fp32)
  KERNEL_PRIVATEUSEONE(margin_ranking_loss, fp32)
  KERNEL_PRIVATEUSEONE(multilabel_margin_loss, fp32)
  KERNEL_PRIVATEUSEONE(multi_margin_loss, fp32)
  KERNEL_PRIVATEUSEONE(soft_margin_loss, fp32)
  KERNEL_PRIVATEUSEONE(triplet_margin_loss, fp32)
  // ---- fp32: interpolation (weights summed in the input's dtype) ----
  KERNEL_PRIVATEUSEONE(upsample_nearest1d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_nearest2d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_nearest3d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_linear1d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_bilinear2d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_trilinear3d, fp32)
  KERNEL_PRIVATEUSEONE(upsample_bicubic2d, fp32)
  // LITERALINCLUDE END: AMP FP32
}

// The policies that take or pick a dtype, and the refused operators (two
// blocks of one key: a registration block is a function).
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // LITERALINCLUDE START: AMP OPTIONAL DTYPE
  // ---- fp32_set_opt_dtype: float32 unless the caller chose an output dtype ----
  KERNEL_PRIVATEUSEONE(softmax, int, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(log_softmax, int, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(sum, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(sum, dim_IntList, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(prod, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(prod, dim_int, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(cumsum, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(cumprod, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(linalg_vector_norm, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(linalg_matrix_norm, fp32_set_opt_dtype)
  KERNEL_PRIVATEUSEONE(linalg_matrix_norm, str_ord, fp32_set_opt_dtype)

  // ---- fp32_append_dtype: norm's overloads without a dtype argument ----
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(
      at::norm, "norm.Scalar", Tensor(const Tensor&, const Scalar&),
      Tensor(const Tensor&, const std::optional<Scalar>&, ScalarType), fp32_append_dtype)
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(
      at::norm, "norm.ScalarOpt_dim",
      Tensor(const Tensor&, const std::optional<Scalar>&, IntArrayRef, bool),
      Tensor(const Tensor&, const std::optional<Scalar>&, IntArrayRef, bool, ScalarType),
      fp32_append_dtype)
  // LITERALINCLUDE END: AMP OPTIONAL DTYPE

  // LITERALINCLUDE START: AMP PROMOTE
  // ---- promote: the widest floating dtype among the inputs ----
  KERNEL_PRIVATEUSEONE(addcdiv, promote)
  KERNEL_PRIVATEUSEONE(addcmul, promote)
  KERNEL_PRIVATEUSEONE(atan2, promote)
  KERNEL_PRIVATEUSEONE(bilinear, promote)
  KERNEL_PRIVATEUSEONE(cross, promote)
  KERNEL_PRIVATEUSEONE(linalg_cross, promote)
  KERNEL_PRIVATEUSEONE(dot, promote)
  KERNEL_PRIVATEUSEONE(vdot, promote)
  KERNEL_PRIVATEUSEONE(grid_sampler, promote)
  KERNEL_PRIVATEUSEONE(index_put, promote)
  KERNEL_PRIVATEUSEONE(scatter_add, promote)
  KERNEL_PRIVATEUSEONE(tensordot, promote)
  KERNEL_PRIVATEUSEONE(cat, promote)
  KERNEL_PRIVATEUSEONE(stack, promote)
  // LITERALINCLUDE END: AMP PROMOTE

  // LITERALINCLUDE START: AMP REFUSED REGISTRATION
  // ---- refused ----
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN(binary_cross_entropy_refused));
  // LITERALINCLUDE END: AMP REFUSED REGISTRATION
}

} // namespace at::autocast::accinte
