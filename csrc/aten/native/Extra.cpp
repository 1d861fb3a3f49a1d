#include <csrc/aten/native/Extra.h>

#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>

#include <functional>
#include <optional>
#include <tuple>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/emulation/CheckedLaunch.h>
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
// The backend the CPU's convolution picks for these arguments (mkldnn,
// slow2d, ...), asked of PyTorch's own selection on CPU aliases (metadata
// only, no device memory is read). Its memory format is the one the CPU
// gives its output and gradients: channels_last for a channels_last input or
// weight.
at::native::ConvBackend cpu_convolution_backend(const at::Tensor& input, const at::Tensor& weight,
                                                std::optional<int64_t> bias_size,
                                                c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                c10::IntArrayRef dilation, bool transposed,
                                                c10::IntArrayRef output_padding, int64_t groups) {
  std::vector<c10::SymInt> bias_sizes;
  if (bias_size) {
    bias_sizes.emplace_back(*bias_size);
  }
  return at::native::select_conv_backend(
      cpu_alias(input), cpu_alias(weight), std::nullopt, c10::fromIntArrayRefSlow(stride),
      c10::fromIntArrayRefSlow(padding), c10::fromIntArrayRefSlow(dilation), transposed,
      c10::fromIntArrayRefSlow(output_padding), c10::SymInt(groups),
      bias_size ? at::OptionalSymIntArrayRef(bias_sizes) : std::nullopt);
}

at::MemoryFormat cpu_convolution_memory_format(const at::Tensor& input, const at::Tensor& weight,
                                               at::native::ConvBackend backend) {
  return at::native::_determine_backend_memory_format(cpu_alias(input), cpu_alias(weight),
                                                      backend);
}
// LITERALINCLUDE END: OPERATORS CONVOLUTION LAYOUT

} // namespace

// Note [accinte convolution checks at the call]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch checks a convolution's shapes before it reaches
// convolution_overrideable, but the dtypes are checked by the CPU backend's
// kernel, each its own way: slow_conv2d takes integers, slow_conv_transpose2d
// does not, none takes bool or float8 ("slow_conv2d_cpu" not implemented for
// 'Bool'). Queued unchecked, such a call would return and fail at the next
// synchronisation. What the kernel checks depends on the dtypes, the backend
// and the number of dimensions, never on values or sizes, so these are the
// call's signature for the engine's first-run rule (launch_after_first_run,
// FirstRun.h): the first call of each signature waits for its kernel and
// raises its error at the call with the CPU's type and message; later calls
// of a signature that ran are queued. (While a stream captures a graph
// nothing may wait for it: the call is queued unchecked.)

// Both run as kernels on the current stream: output shapes are known from
// the arguments (PyTorch checked them before calling), so nothing waits but
// the first forward call of each dtype and backend (Note [accinte
// convolution checks at the call]). The backward runs only for the floating
// dtypes autograd differentiates, which every CPU backend takes.
at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding,
                                    c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  c10::accinte::AccInteGuard guard(input.device().index());
  const bool has_bias = bias.has_value() && bias->defined();
  const at::native::ConvBackend backend = cpu_convolution_backend(
      input, weight, has_bias ? std::optional(bias->size(0)) : std::nullopt, stride, padding,
      dilation, transposed, output_padding, groups);
  at::Tensor out = at::empty(
      conv_output_sizes(input, weight, stride, padding, dilation, transposed, output_padding,
                        groups),
      input.options().memory_format(cpu_convolution_memory_format(input, weight, backend)));
  std::function<void()> kernel =
      [in = cpu_alias(input), w = cpu_alias(weight), b = has_bias ? cpu_alias(*bias) : at::Tensor(),
       o = cpu_alias(out), stride = stride.vec(), padding = padding.vec(),
       dilation = dilation.vec(), transposed, output_padding = output_padding.vec(), groups]() {
        o.copy_(at::convolution(
            in, w, b.defined() ? std::optional<at::Tensor>(b) : std::nullopt, stride, padding,
            dilation, transposed, output_padding, groups));
      };
  // See Note [accinte convolution checks at the call].
  const int64_t no_bias = -1;
  launch_after_first_run(
      c10::accinte::getCurrentAccInteStream(input.device().index()),
      "aten::convolution_overrideable",
      {static_cast<int64_t>(input.scalar_type()), static_cast<int64_t>(weight.scalar_type()),
       has_bias ? static_cast<int64_t>(bias->scalar_type()) : no_bias,
       static_cast<int64_t>(backend), input.dim()},
      std::move(kernel));
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
      input, weight,
      cpu_convolution_backend(input, weight,
                              output_mask[2] ? std::optional(out_channels) : std::nullopt, stride,
                              padding, dilation, transposed, output_padding, groups));
  at::Tensor grad_input =
      output_mask[0] ? at::empty(input.sizes(), input.options().memory_format(layout))
                     : at::Tensor();
  at::Tensor grad_weight =
      output_mask[1] ? at::empty(weight.sizes(), weight.options().memory_format(layout))
                     : at::Tensor();
  at::Tensor grad_bias =
      output_mask[2] ? at::empty({out_channels}, weight.options()) : at::Tensor();
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
