// Note [accinte quantized tensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A quantized tensor is integers (int8, uint8, int32...) plus a quantizer
// (scale and zero point, per tensor or per channel). On accinte it is a
// QTensorImpl with the QuantizedPrivateUse1 key whose integers live in device
// memory; the quantizer stays on the host, like a nested tensor's metadata
// (per-channel scales are CPU tensors, where CUDA keeps them on the device).
// Operators on it run the CPU's quantized kernels on host aliases through the
// layout fallback (Note [accinte layout fallbacks]); the quantizing
// operators on dense inputs (quantize_per_tensor, quantize_per_channel, the
// quantized empties) take the same fallback by name, since their result is
// quantized. An operator the CPU has no quantized kernel for raises
// NotImplementedError naming it. Copies get their own kernels, below,
// because the fallback brings every CPU result to the device while `.cpu()`
// wants it on the host, and `copy_` mixes devices.
#include <csrc/aten/native/QuantizedCopy.h>

#include <ATen/Functions.h>
#include <ATen/quantized/QTensorImpl.h>
#include <ATen/quantized/Quantizer.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <memory>

namespace at::native::accinte {
namespace {

at::Tensor host_side(const at::Tensor& t) {
  return t.is_privateuseone() ? host_alias(t) : t;
}

c10::accinte::AccInteStream stream_for(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor& device_side = a.is_privateuseone() ? a : b;
  const auto stream = c10::accinte::getCurrentAccInteStream(device_side.device().index());
  c10::accinte::check_not_capturing(stream, "a copy of a quantized tensor (accinte runs the "
                                            "CPU's kernel and waits for it)");
  return stream;
}

} // namespace

// LITERALINCLUDE START: QUANTIZED COPY
at::Tensor& quantized_copy_(at::Tensor& self, const at::Tensor& src, bool /*non_blocking*/) {
  const auto stream = stream_for(self, src);
  c10::accinte::AccInteGuard guard(stream.device_index());
  const at::Tensor dst_host = host_side(self);
  run_and_wait(stream, [dst = dst_host, from = host_side(src)]() mutable { dst.copy_(from); },
               "aten::copy_");
  if (self.is_quantized() && self.is_privateuseone()) {
    // The CPU's copy gave the alias the source's quantizer.
    at::get_qtensorimpl(self)->set_quantizer_(at::get_qtensorimpl(dst_host)->quantizer());
  }
  return self;
}
// LITERALINCLUDE END: QUANTIZED COPY

at::Tensor quantized_to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                             std::optional<at::Layout> layout, std::optional<at::Device> device,
                             std::optional<bool> pin_memory, bool non_blocking,
                             std::optional<at::MemoryFormat> memory_format) {
  const at::Device target = device.value_or(self.device());
  const auto stream = stream_for(self, self);
  c10::accinte::AccInteGuard guard(stream.device_index());
  auto result = std::make_shared<at::Tensor>();
  run_and_wait(stream, [result, from = host_alias(self), dtype, layout, pin_memory, non_blocking,
                        memory_format]() {
    *result = at::_to_copy(from, dtype, layout, at::Device(at::kCPU), pin_memory, non_blocking,
                           memory_format);
  }, "aten::_to_copy");
  if (target.is_cpu()) {
    return *result;
  }
  return device_counterpart(*result, target, [&](const at::Tensor& c) {
    return device_copy_of(c, c10::accinte::getCurrentAccInteStream(target.index()));
  });
}

} // namespace at::native::accinte
