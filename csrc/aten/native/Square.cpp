#include <csrc/aten/native/Square.h>

#include <ATen/Dispatch_v2.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/pow.h>

#include <csrc/aten/native/CallCounts.h>

namespace at::native::accinte {

at::Tensor square(const at::Tensor& self) {
  count_call("square"); // test hook, see CallCounts.h
  if (self.scalar_type() == at::kBool) {
    return at::pow(self, 2); // pow promotes bool to int64; mul would stay bool
  }
  // The dtypes of pow(self, 2) on the CPU, which refuses the others at the
  // call ("pow" not implemented for 'UInt16'); mul would accept them.
  AT_DISPATCH_V2(self.scalar_type(), "pow", AT_WRAP([&] {}), AT_EXPAND(AT_ALL_TYPES),
                 AT_EXPAND(AT_COMPLEX_TYPES), kHalf, kBFloat16);
  return at::mul(self, self);
}

} // namespace at::native::accinte
