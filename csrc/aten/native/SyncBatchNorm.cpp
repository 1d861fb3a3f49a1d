// Note [accinte SyncBatchNorm]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// nn.SyncBatchNorm accepts CUDA and PrivateUse1 tensors (torch/nn/modules/
// batchnorm.py) and, on two or more processes, normalises with five operators
// that only CUDA implements (torch/nn/modules/_functions.py): each process's
// statistics (batch_norm_stats), all of them gathered and merged
// (batch_norm_gather_stats_with_counts), the normalisation (batch_norm_elemt)
// and, backward, per-channel sums (batch_norm_backward_reduce) all-reduced
// and turned into the input gradient (batch_norm_backward_elemt). DDP and
// Lightning's sync_batchnorm=True reach them on accinte; the fallback has no
// CPU kernel to run. These kernels are written with operators that run on
// accinte, so each is a few asynchronous stream kernels.
//
// Numerics are CUDA's (aten/src/ATen/native/cuda/Normalization.cu{,h}):
// statistics in CUDA's accumulate type (float for half, bfloat16 and float;
// double for double), each per-element formula in the order CUDA's kernel
// writes it, invstd as 1 / sqrt(var + eps) with the sum in double (CUDA adds
// the double eps to the float variance), the processes' rows merged in
// order with CUDA's pairwise Welford update. The reductions themselves (mean,
// variance, sums over a channel) are the CPU's: CUDA's Welford and warp-shuffle
// orders cannot be reproduced on the host, so a result agrees with CUDA's to
// the rounding of the accumulate type, not bit for bit.
#include <csrc/aten/native/SyncBatchNorm.h>

#include <ATen/AccumulateType.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/Functions.h>
#include <ATen/native/Resize.h>

namespace at::native::accinte {
namespace {

// CUDA's floating dtypes for these kernels; others are refused at the call
// with the message of an AT_DISPATCH named NAME, as on CUDA.
#define ACCINTE_CHECK_FLOATING(TYPE, NAME)                                  \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP([&] {}), AT_EXPAND(AT_FLOATING_TYPES), \
                 at::kHalf, at::kBFloat16)

// The dimensions a per-channel statistic reduces: all but 1.
std::vector<int64_t> reduced_dims(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "batch norm expects an input with at least 2 dimensions, got ",
              input.dim());
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) {
    dims.push_back(d);
  }
  return dims;
}

// A per-channel vector viewed to broadcast against `input` (N, C, ...).
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = v.numel();
  return v.reshape(shape);
}

void check_type(const at::Tensor& t, c10::ScalarType expected, const char* name) {
  TORCH_CHECK(t.scalar_type() == expected, "Expected ", name, " to have type ", expected,
              " but got ", t.scalar_type());
}

} // namespace

// LITERALINCLUDE START: SYNC BATCH NORM STATS
std::tuple<at::Tensor, at::Tensor> batch_norm_stats(const at::Tensor& input, double eps) {
  ACCINTE_CHECK_FLOATING(input.scalar_type(), "batch_norm_stats_accinte");
  const auto acc = at::toAccumulateType(input.scalar_type(), /*is_cuda=*/true);
  auto [var, mean] = at::var_mean(input.to(acc), reduced_dims(input), /*correction=*/0);
  // CUDA's InvStd: (float variance + double eps) in double, its reciprocal
  // square root stored in the accumulate type; 0 when both are 0.
  at::Tensor invstd = var.to(at::kDouble).add(eps).sqrt_().reciprocal_().to(acc);
  if (eps == 0) {
    invstd.masked_fill_(var.eq(0), 0);
  }
  return {mean, invstd};
}
// LITERALINCLUDE END: SYNC BATCH NORM STATS

std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats_with_counts(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean_opt,
    const std::optional<at::Tensor>& running_var_opt, double momentum, double eps,
    const at::Tensor& counts) {
  const bool has_running_mean = running_mean_opt.has_value() && running_mean_opt->defined();
  const bool has_running_var = running_var_opt.has_value() && running_var_opt->defined();
  // The statistics' dtype is the running statistics', else the input's.
  const auto scalar_type = has_running_mean ? running_mean_opt->scalar_type() : input.scalar_type();
  ACCINTE_CHECK_FLOATING(scalar_type, "batch_norm_update_stats_accinte");
  const auto acc = at::toAccumulateType(scalar_type, /*is_cuda=*/true);
  TORCH_CHECK(mean.dim() == 2 && invstd.sizes() == mean.sizes(),
              "mean and invstd must be (world size, channels), got ", mean.sizes(), " and ",
              invstd.sizes());
  TORCH_CHECK(counts.dim() == 1 && counts.size(0) == mean.size(0), "counts must have ",
              mean.size(0), " elements (one per row of mean), got ", counts.sizes());
  check_type(mean, acc, "mean");
  check_type(invstd, acc, "invstd");
  check_type(counts, scalar_type, "counts");
  TORCH_CHECK(counts.device() == mean.device(), "Expected all tensors to be on the same device, "
              "but found at least two devices, ", mean.device(), " and ", counts.device(),
              "! (batch_norm_gather_stats_with_counts: counts)");

  // CUDA's batch_norm_reduce_statistics_kernel, one row after another.
  const at::Tensor count_all = counts.to(acc);
  at::Tensor avg = at::zeros({mean.size(1)}, mean.options());
  at::Tensor var_n = at::zeros({mean.size(1)}, mean.options());
  at::Tensor n = at::zeros({}, mean.options());
  for (int64_t row = 0; row < mean.size(0); ++row) {
    const at::Tensor count = count_all.select(0, row);
    const at::Tensor m = mean.select(0, row);
    at::Tensor v = invstd.select(0, row).reciprocal();
    v = v.mul(v).sub_(eps).mul_(count);
    const at::Tensor factor = n.add(count).reciprocal_();
    const at::Tensor diff = avg.sub(m);
    var_n.add_(v.add_(diff.mul(diff).mul_(n).mul_(count).mul_(factor)));
    avg = avg.mul(n.mul(factor)).add_(m.mul(count.mul(factor)));
    n.add_(count);
  }
  const at::Tensor out_invstd = var_n.div(n).add_(eps).sqrt_().reciprocal_();
  // (1 - momentum) * running + momentum * statistic, momentum and 1 - momentum
  // in the accumulate type as CUDA's kernel computes them.
  const double mom = acc == at::kDouble ? momentum : static_cast<float>(momentum);
  const double keep = acc == at::kDouble ? 1 - momentum : 1.0f - static_cast<float>(momentum);
  if (has_running_mean) {
    const at::Tensor& running_mean = *running_mean_opt;
    running_mean.copy_(running_mean.to(acc).mul(keep).add_(avg.mul(mom)));
  }
  if (has_running_var) {
    const at::Tensor& running_var = *running_var_opt;
    const at::Tensor unbiased = var_n.div(n.sub(1));
    running_var.copy_(running_var.to(acc).mul(keep).add_(unbiased.mul_(mom)));
  }
  return {avg, out_invstd};
}

std::tuple<at::Tensor, at::Tensor> batch_norm_gather_stats(
    const at::Tensor& input, const at::Tensor& mean, const at::Tensor& invstd,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    double momentum, double eps, int64_t count) {
  const auto counts_type = running_mean.has_value() && running_mean->defined()
                               ? running_mean->scalar_type()
                               : input.scalar_type();
  const at::Tensor counts = at::full({mean.size(0)}, count, mean.options().dtype(counts_type));
  return accinte::batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean,
                                                      running_var, momentum, eps, counts);
}

at::Tensor& batch_norm_elemt_out(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                 const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                                 const at::Tensor& invstd, double /*eps: unused, as on CUDA*/,
                                 at::Tensor& out) {
  ACCINTE_CHECK_FLOATING(input.scalar_type(), "batch_norm_elementwise_accinte");
  const auto acc = mean.scalar_type();
  TORCH_CHECK(at::isFloatingType(acc) && invstd.scalar_type() == acc,
              "batch_norm_elemt: mean and invstd need one floating-point dtype (the input's "
              "or its accumulate type), got ", acc, " and ", invstd.scalar_type());
  // CUDA's transform: gamma * (x - mean) * invstd + beta, in the statistics'
  // accumulate type, rounded once to the input's dtype.
  at::Tensor y = input.to(acc).sub(per_channel(mean, input));
  if (weight.has_value() && weight->defined()) {
    y = per_channel(weight->to(acc), input).mul(y);
  }
  y.mul_(per_channel(invstd, input));
  if (bias.has_value() && bias->defined()) {
    y.add_(per_channel(bias->to(acc), input));
  }
  at::native::resize_output(out, input.sizes());
  out.copy_(y);
  return out;
}

at::Tensor batch_norm_elemt(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, const at::Tensor& mean,
                            const at::Tensor& invstd, double eps) {
  at::Tensor out = at::empty_like(input, input.suggest_memory_format());
  return batch_norm_elemt_out(input, weight, bias, mean, invstd, eps, out);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_reduce(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& invstd, const std::optional<at::Tensor>& weight, bool input_g, bool weight_g,
    bool bias_g) {
  ACCINTE_CHECK_FLOATING(grad_out.scalar_type(), "batch_norm_backward_reduce");
  TORCH_CHECK(mean.scalar_type() == invstd.scalar_type(),
              "mean and invstd need to have the same data types");
  const auto acc = mean.scalar_type();
  const auto dims = reduced_dims(input);
  // CUDA's GradOp: sums of dy and of dy * (x - mean), in the accumulate type.
  const at::Tensor dy = grad_out.to(acc);
  const at::Tensor sum_dy = dy.sum(dims);
  const at::Tensor sum_dy_xmu = dy.mul(input.to(acc).sub(per_channel(mean, input))).sum(dims);
  const auto grad_options = weight.has_value() && weight->defined() ? weight->options()
                                                                    : mean.options();
  at::Tensor grad_weight, grad_bias;
  if (weight_g) {
    grad_weight = sum_dy_xmu.mul(invstd).to(grad_options.dtype());
  }
  if (bias_g) {
    grad_bias = sum_dy.to(grad_options.dtype());
  }
  if (!input_g) {
    return {at::Tensor(), at::Tensor(), grad_weight, grad_bias};
  }
  return {sum_dy, sum_dy_xmu, grad_weight, grad_bias};
}

at::Tensor batch_norm_backward_elemt(const at::Tensor& grad_out, const at::Tensor& input,
                                     const at::Tensor& mean, const at::Tensor& invstd,
                                     const std::optional<at::Tensor>& weight,
                                     const at::Tensor& sum_dy, const at::Tensor& sum_dy_xmu,
                                     const at::Tensor& count) {
  ACCINTE_CHECK_FLOATING(grad_out.scalar_type(), "batch_norm_backward_elemt");
  TORCH_CHECK(mean.scalar_type() == invstd.scalar_type(),
              "mean and invstd need to have the same data types");
  check_type(count, at::kInt, "count");
  const auto acc = mean.scalar_type();
  // 1 / (elements of all processes), as CUDA's kernel sums `count`: on the
  // device, so nothing synchronises.
  const at::Tensor norm = count.sum(at::kLong).to(acc).reciprocal_();
  const at::Tensor m_dy = per_channel(sum_dy.mul(norm), input);
  const at::Tensor factor_1 =
      per_channel(invstd.mul(invstd).mul_(sum_dy_xmu).mul_(norm), input);
  at::Tensor factor_2 = per_channel(invstd, input);
  if (weight.has_value() && weight->defined()) {
    factor_2 = per_channel(weight->to(acc), input).mul(factor_2);
  }
  // (dy - mean(dy) - (x - mean) * invstd^2 * mean(dy * xmu)) * weight * invstd
  const at::Tensor xmu = input.to(acc).sub(per_channel(mean, input));
  const at::Tensor grad = grad_out.to(acc).sub(m_dy).sub_(xmu.mul(factor_1)).mul_(factor_2);
  at::Tensor grad_input = at::empty_like(input, input.suggest_memory_format());
  grad_input.copy_(grad);
  return grad_input;
}

} // namespace at::native::accinte
