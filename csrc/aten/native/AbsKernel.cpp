#include <csrc/aten/native/AbsKernel.h>

#include <ATen/Dispatch_v2.h>
#include <ATen/ops/abs_cpu_dispatch.h>

#include <csrc/aten/native/CallCounts.h>
#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuKernel.h>
#include <csrc/runtime/AccInteStream.h>


namespace at::native::accinte {

// LITERALINCLUDE START: DISPATCH STUB KERNEL
void abs_kernel(at::TensorIteratorBase& iter) {
  count_call("abs_stub"); // test hook, see CallCounts.h
  // The dtype switch runs on the calling thread, as a device kernel's launch
  // would: an unsupported dtype raises here, at the call, not in the stream.
  // The dtypes: the CPU's, which refuse bool and float8_e8m0fnu (an exponent
  // without a sign) with NotImplementedError; hence the four float8 types
  // named one by one instead of AT_FLOAT8_TYPES, which has all five.
  AT_DISPATCH_V2(iter.dtype(), "abs_accinte", AT_WRAP([&] {}),
                 AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_COMPLEX_TYPES), kFloat8_e5m2,
                 kFloat8_e5m2fnuz, kFloat8_e4m3fn, kFloat8_e4m3fnuz, kHalf, kBFloat16,
                 kComplexHalf);
  if (iter.numel() == 0) {
    return;
  }
  // A real device would launch its own abs loop here. accinte's device
  // memory is host memory, so its kernel is the CPU's abs run in place on
  // CPU aliases of the iterator's operands (see CpuAlias.h), on the stream's
  // worker thread. (Not abs_stub(kCPU, ...): the stub's inline call depends
  // on the CPU-capability macros libtorch was built with, which a unit
  // outside it would have to copy; benchmarks/README.md measures the gain.)
  const auto stream = c10::accinte::getCurrentAccInteStream(iter.device().index());
  launch_cpu_kernel(
      stream, [out = cpu_alias(iter.output()), self = cpu_alias(iter.input())]() mutable {
        at::cpu::abs_out(out, self);
      }, "aten::abs");
}
// LITERALINCLUDE END: DISPATCH STUB KERNEL

} // namespace at::native::accinte
