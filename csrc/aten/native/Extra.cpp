#include <csrc/aten/native/Extra.h>

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>

namespace at::native::accinte {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (input.numel() == 0) {
    return {input, at::empty_like(input)};
  }
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double keep = 1. - p;
  const double scale = keep == 0 ? 0. : 1. / keep; // p == 1 drops everything, no NaN
  at::Tensor mask = at::empty_like(input, at::MemoryFormat::Contiguous);
  mask.bernoulli_(keep);
  at::Tensor output = input.mul(mask).mul_(scale);
  return {output, mask};
}

namespace {

at::Tensor on_host(const at::Tensor& t) {
  return t.defined() ? t.cpu() : t;
}

at::Tensor on_device_of(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

} // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding,
                                    c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) {
    host_bias = bias->cpu();
  }
  const at::Tensor out = at::convolution(on_host(input), on_host(weight), host_bias, stride,
                                         padding, dilation, transposed, output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  // The bias gradient has one entry per output channel.
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> bias_sizes{out_channels};
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      on_host(grad_output), on_host(input), on_host(weight), bias_sizes, stride, padding,
      dilation, transposed, output_padding, groups, output_mask);
  return {on_device_of(grad_input, input), on_device_of(grad_weight, input),
          on_device_of(grad_bias, input)};
}

} // namespace at::native::accinte
