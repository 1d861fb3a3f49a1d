// Registration of accinte kernels beyond the minimal set (native/Extra.h).
#include <torch/library.h>

#include <csrc/aten/native/Extra.h>
#include <csrc/aten/native/RecordStream.h>
#include <csrc/aten/native/Rnn.h>
#include <csrc/aten/native/TypeProperties.h>

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
}

// A CompositeImplicitAutograd operator: tensors that require grad reach it
// through the Autograd key, before any backend kernel.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

} // namespace at::native::accinte
