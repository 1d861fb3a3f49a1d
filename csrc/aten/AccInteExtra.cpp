// Registration of accinte kernels beyond the minimal set (native/Extra.h).
#include <ATen/ops/is_set_to_native.h>
#include <torch/library.h>

#include <csrc/aten/native/Extra.h>
#include <csrc/aten/native/RecordStream.h>
#include <csrc/aten/native/Rnn.h>
#include <csrc/aten/native/TypeProperties.h>
#include <csrc/emulation/fallback/Fallback.h>

namespace at::native::accinte {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(thnn_fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(thnn_fused_lstm_cell_backward_impl));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(thnn_fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(thnn_fused_gru_cell_backward));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
  // mode.values has one CompositeExplicitAutograd kernel for every device,
  // which refuses devices other than CPU, CUDA and XPU before doing anything;
  // the fallback runs the CPU's on device memory instead.
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&accinte_fallback>());
  // A question about storages, which the fallback would ask of CPU aliases
  // (each with a storage of its own); PyTorch's kernel is device-generic.
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));
}

// A CompositeImplicitAutograd operator: tensors that require grad reach it
// through the Autograd key, before any backend kernel.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

} // namespace at::native::accinte
