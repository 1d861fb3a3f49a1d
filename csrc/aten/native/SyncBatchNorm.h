#pragma once
// The five operators of nn.SyncBatchNorm, which only CUDA implements.
// Registration: ../AccInteCudaParity.cpp. See Note [accinte SyncBatchNorm].

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// Per-channel mean and 1 / sqrt(biased variance + eps) of `input` (N, C, ...),
/// in CUDA's accumulate type (float for half, bfloat16 and float; double for
/// double). invstd is 0 where the variance and eps are both 0.
std::tuple<at::Tensor, at::Tensor> batch_norm_stats(const at::Tensor& input, double eps);

/// Merges the rows of (mean, invstd), shape (world, C), each computed over
/// counts[row] elements, into one (mean, invstd) as CUDA's kernel does (rows in
/// order); updates running_mean/running_var in place with the unbiased variance.
std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats_with_counts(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, const at::Tensor& counts);

/// `batch_norm_gather_stats_with_counts` with the same `count` for every row.
std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, int64_t count);

/// weight * (input - mean) * invstd + bias per channel, in the input's dtype
/// and memory format.
at::Tensor batch_norm_elemt(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                            const at::Tensor& invstd, double eps);

/// `batch_norm_elemt` into `out` (resized as needed).
at::Tensor& batch_norm_elemt_out(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                 const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                                 const at::Tensor& invstd, double eps, at::Tensor& out);

/// (sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel; the first two
/// only if `input_g`, the others only if `weight_g` / `bias_g` (undefined
/// otherwise).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_reduce(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& invstd, const std::optional<at::Tensor>& weight, bool input_g, bool weight_g,
    bool bias_g);

/// The input gradient from the reduced sums of all processes; `count` (int32)
/// holds each process's elements per channel.
at::Tensor batch_norm_backward_elemt(const at::Tensor& grad_out, const at::Tensor& input,
                                     const at::Tensor& mean, const at::Tensor& invstd,
                                     const std::optional<at::Tensor>& weight,
                                     const at::Tensor& sum_dy, const at::Tensor& sum_dy_xmu,
                                     const at::Tensor& count);

} // namespace at::native::accinte
