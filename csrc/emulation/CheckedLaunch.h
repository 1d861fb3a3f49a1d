#pragma once
// launch_after_first_run: the first-call check of a hand-written kernel whose
// CPU checks depend on a few facts of its arguments (the convolution's dtypes
// and backend), so that its errors and warnings reach the caller at the call
// as the CPU's do, and later calls are queued.

#include <c10/util/ArrayRef.h>

#include <csrc/runtime/AccInteStream.h>

#include <cstdint>
#include <functional>

namespace at::native::accinte {

/// The first call of a signature (`name` and `facts`: everything the CPU's
/// checks read) runs `kernel` on `stream` and waits for it (run_and_wait:
/// its error reaches the caller at the call, with the CPU's type and
/// message, and so do its warnings). Once a call of the signature has run
/// without error or warning, later calls are queued (launch_cpu_kernel); a
/// thread finds a signature it has seen without a lock. While `stream`
/// captures nothing may wait: the kernel is queued unchecked. Either way the
/// kernel runs in the same CpuKernelScope (Note [accinte one kernel scope]).
/// `kernel` owns what it works on; `name` (a string that outlives the
/// process's kernels, an operator's name) labels it as launch_kernel's does.
void launch_after_first_run(const c10::accinte::AccInteStream& stream, const char* name,
                            c10::ArrayRef<int64_t> facts, std::function<void()> kernel);

} // namespace at::native::accinte
