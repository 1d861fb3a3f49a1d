#include <csrc/aten/native/Square.h>

#include <ATen/ops/mul.h>
#include <ATen/ops/pow.h>

#include <csrc/aten/native/CallCounts.h>

namespace at::native::accinte {

at::Tensor square(const at::Tensor& self) {
  count_call("square"); // test hook, see CallCounts.h
  if (self.scalar_type() == at::kBool) {
    return at::pow(self, 2); // pow promotes bool to int64; mul would stay bool
  }
  return at::mul(self, self);
}

} // namespace at::native::accinte
