#include <csrc/aten/native/Extra.h>

#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

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

std::vector<int64_t> conv_output_sizes(const at::Tensor& input, const at::Tensor& weight,
                                       c10::IntArrayRef stride, c10::IntArrayRef padding,
                                       c10::IntArrayRef dilation, bool transposed,
                                       c10::IntArrayRef output_padding, int64_t groups) {
  std::vector<int64_t> sizes{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) {
    const int64_t i = d - 2;
    const int64_t kernel = dilation[i] * (weight.size(d) - 1);
    sizes.push_back(transposed ? (input.size(d) - 1) * stride[i] - 2 * padding[i] + kernel +
                                     output_padding[i] + 1
                               : (input.size(d) + 2 * padding[i] - kernel - 1) / stride[i] + 1);
  }
  return sizes;
}

at::Tensor alias_or_undefined(const at::Tensor& t) {
  return t.defined() ? cpu_alias(t) : t;
}

// LITERALINCLUDE START: OPERATORS CONVOLUTION LAYOUT
// The memory format the CPU's convolution gives its output and gradients for
// these arguments: that of the backend it picks (mkldnn, slow2d, ...), which
// keeps channels_last for a channels_last input or weight. Asked of PyTorch's
// own selection on CPU aliases (metadata only, no device memory is read).
at::MemoryFormat cpu_convolution_memory_format(const at::Tensor& input, const at::Tensor& weight,
                                               std::optional<int64_t> bias_size,
                                               c10::IntArrayRef stride, c10::IntArrayRef padding,
                                               c10::IntArrayRef dilation, bool transposed,
                                               c10::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor cpu_input = cpu_alias(input);
  const at::Tensor cpu_weight = cpu_alias(weight);
  std::vector<c10::SymInt> bias_sizes;
  if (bias_size) {
    bias_sizes.emplace_back(*bias_size);
  }
  const at::native::ConvBackend backend = at::native::select_conv_backend(
      cpu_input, cpu_weight, std::nullopt, c10::fromIntArrayRefSlow(stride),
      c10::fromIntArrayRefSlow(padding), c10::fromIntArrayRefSlow(dilation), transposed,
      c10::fromIntArrayRefSlow(output_padding), c10::SymInt(groups),
      bias_size ? at::OptionalSymIntArrayRef(bias_sizes) : std::nullopt);
  return at::native::_determine_backend_memory_format(cpu_input, cpu_weight, backend);
}
// LITERALINCLUDE END: OPERATORS CONVOLUTION LAYOUT

} // namespace

// Both run as kernels on the current stream: output shapes are known from
// the arguments (PyTorch checked them before calling), so nothing waits.
at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding,
                                    c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  c10::accinte::AccInteGuard guard(input.device().index());
  const at::MemoryFormat layout = cpu_convolution_memory_format(
      input, weight, bias.has_value() && bias->defined() ? std::optional(bias->size(0)) : std::nullopt,
      stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor out = at::empty(conv_output_sizes(input, weight, stride, padding, dilation,
                                               transposed, output_padding, groups),
                             input.options().memory_format(layout));
  launch_cpu_kernel(
      c10::accinte::getCurrentAccInteStream(input.device().index()),
      [in = cpu_alias(input), w = cpu_alias(weight),
       b = bias.has_value() ? alias_or_undefined(*bias) : at::Tensor(), o = cpu_alias(out),
       stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(), transposed,
       output_padding = output_padding.vec(), groups]() mutable {
        o.copy_(at::convolution(in, w, b.defined() ? std::optional<at::Tensor>(b) : std::nullopt,
                                stride, padding, dilation, transposed, output_padding, groups));
      }, "aten::convolution_overrideable");
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  c10::accinte::AccInteGuard guard(input.device().index());
  // The bias gradient has one entry per output channel.
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  // Gradients laid out as the CPU's backward lays them out.
  const at::MemoryFormat layout = cpu_convolution_memory_format(
      input, weight, output_mask[2] ? std::optional(out_channels) : std::nullopt, stride,
      padding, dilation, transposed, output_padding, groups);
  at::Tensor grad_input =
      output_mask[0] ? at::empty(input.sizes(), input.options().memory_format(layout))
                     : at::Tensor();
  at::Tensor grad_weight =
      output_mask[1] ? at::empty(weight.sizes(), weight.options().memory_format(layout))
                     : at::Tensor();
  at::Tensor grad_bias = output_mask[2] ? at::empty({out_channels}, weight.options()) : at::Tensor();
  launch_cpu_kernel(
      c10::accinte::getCurrentAccInteStream(input.device().index()),
      [go = cpu_alias(grad_output), in = cpu_alias(input), w = cpu_alias(weight),
       gi = alias_or_undefined(grad_input), gw = alias_or_undefined(grad_weight),
       gb = alias_or_undefined(grad_bias), stride = stride.vec(), padding = padding.vec(),
       dilation = dilation.vec(), transposed, output_padding = output_padding.vec(), groups,
       output_mask, out_channels]() mutable {
        const std::vector<int64_t> bias_sizes{out_channels};
        auto [i, w_, b] = at::convolution_backward(go, in, w, bias_sizes, stride, padding,
                                                   dilation, transposed, output_padding, groups,
                                                   output_mask);
        for (auto [dst, src] : {std::pair{gi, i}, std::pair{gw, w_}, std::pair{gb, b}}) {
          if (dst.defined()) {
            dst.copy_(src);
          }
        }
      }, "aten::convolution_backward_overrideable");
  return {grad_input, grad_weight, grad_bias};
}

} // namespace at::native::accinte
