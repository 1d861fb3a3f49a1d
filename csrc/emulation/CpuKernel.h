#pragma once
// launch_cpu_kernel: how a hand-written accinte kernel queues a CPU kernel
// that computes in place on device memory (through CPU aliases, CpuAlias.h).

#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <csrc/runtime/AccInteKernel.h>

#include <utility>

namespace at::native::accinte {

/// Queues `kernel` on `stream` (launch_kernel) and runs it with the autograd
/// keys excluded: autograd already ran on the launching thread, and the CPU
/// operators the kernel calls on the stream's worker are plain computation,
/// which must not record a graph or bump version counters a second time.
/// `kernel` owns what it works on (CPU aliases, copied arguments), never the
/// caller's locals; `name` labels it as launch_kernel's does. The fallbacks
/// run their kernels in the fuller CpuKernelScope (FallbackCommon.h), which
/// also carries the caller's thread-local state.
template <typename Kernel>
void launch_cpu_kernel(const c10::accinte::AccInteStream& stream, Kernel&& kernel,
                       const char* name) {
  c10::accinte::launch_kernel(
      stream,
      [kernel = std::forward<Kernel>(kernel)]() mutable {
        c10::impl::ExcludeDispatchKeyGuard no_autograd(
            c10::autograd_dispatch_keyset_with_ADInplaceOrView);
        kernel();
      },
      name);
}

} // namespace at::native::accinte
