#pragma once
// Kernels beyond the minimal set that the fallback cannot run correctly on
// its own. Registered in ../AccInteExtra.cpp.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// native_dropout takes no Generator argument, so the CPU kernel would draw
/// from the CPU's default generator. This version draws the mask with
/// bernoulli_, which the fallback routes to the device's generator; the
/// arithmetic is the CPU kernel's.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train);

/// PyTorch sends convolutions of backends it does not know to these two
/// "overrideable" operators, which have no CPU kernel for the fallback to
/// run: they queue the CPU's convolution on device memory as a kernel. Outputs
/// and gradients get the memory format the CPU's convolution would give them
/// (channels_last kept). The forward raises the CPU kernel's errors (a dtype
/// its backend refuses) at the call: the first call of each dtype and
/// backend waits for its kernel (launch_after_first_run,
/// csrc/emulation/fallback/FirstRun.h), later ones are queued.
at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding,
                                    c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

} // namespace at::native::accinte
