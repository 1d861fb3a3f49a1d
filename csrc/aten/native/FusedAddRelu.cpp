#include <csrc/aten/native/FusedAddRelu.h>

#include <ATen/ops/add.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/relu.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace at::native::accinte {
namespace {

void check_arguments(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "fused_add_relu: expected both tensors on one ",
              "device, got ", self.device(), " and ", other.device());
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "fused_add_relu: expected one dtype, ",
              "got ", self.scalar_type(), " and ", other.scalar_type());
  TORCH_CHECK(self.sym_sizes() == other.sym_sizes(), "fused_add_relu: expected one shape, got ",
              self.sym_sizes(), " and ", other.sym_sizes());
}

} // namespace

at::Tensor fused_add_relu(const at::Tensor& self, const at::Tensor& other) {
  check_arguments(self, other);
  at::Tensor out = at::empty_like(self);
  if (out.numel() == 0) {
    return out;
  }
  launch_cpu_kernel(
      c10::accinte::getCurrentAccInteStream(self.device().index()),
      [self = cpu_alias(self), other = cpu_alias(other), out = cpu_alias(out)]() mutable {
        at::add_out(out, self, other).relu_();
      }, "accinte::fused_add_relu");
  return out;
}

at::Tensor fused_add_relu_meta(const at::Tensor& self, const at::Tensor& other) {
  check_arguments(self, other);
  return at::empty_like(self);
}

} // namespace at::native::accinte
