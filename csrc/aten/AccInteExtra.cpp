// Registration of accinte kernels beyond the minimal set (native/Extra.h).
#include <torch/library.h>

#include <csrc/aten/native/Extra.h>
#include <csrc/aten/native/RecordStream.h>

namespace at::native::accinte {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
  m.impl("record_stream", TORCH_FN(record_stream));
}

} // namespace at::native::accinte
