// Note [accinte normal checks std at the call]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's normal with a tensor `std` checks its values before drawing
// (CHECK_NORMAL_TENSOR_STD in ATen's DistributionTemplates.h:
// std.min().ge(0).item()), in code every device shares. On CUDA the .item()
// waits for the device, so a negative standard deviation is refused at the
// call, as on the CPU. accinte's fallback runs the whole CPU kernel as a
// queued kernel, check included, and its first run checks host stand-ins,
// whose made-up values are never negative: the error would wait for the next
// synchronize. So the check is made here first, with CUDA's cost (one
// reduction and a wait), and the call then goes to the fallback. A complex
// `std` goes straight on: the CPU kernel refuses its dtype at the call.
#include <csrc/emulation/shims/NormalStd.h>

#include <ATen/core/Tensor.h>

#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {

void normal_tensor_std_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  const size_t first = stack->size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = (*stack)[first + i];
    if (arguments[i].name() != "std" || !value.isTensor()) {
      continue;
    }
    const at::Tensor& std = value.toTensor();
    if (std.defined() && !std.is_complex() && std.numel() > 0) {
      TORCH_CHECK(std.min().ge(0).item<bool>(), "normal expects all elements of std >= 0.0");
    }
  }
  accinte_fallback(op, stack);
}

const char* const* normal_tensor_std_overloads() {
  static const char* const names[] = {"normal.Tensor_Tensor", "normal.float_Tensor",
                                      "normal.Tensor_Tensor_out", "normal.float_Tensor_out",
                                      nullptr};
  return names;
}

} // namespace at::native::accinte
