// Note [accinte one kernel scope]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every accinte kernel whose body calls CPU operators (the boxed fallback's,
// a hand-written kernel such as the convolution or a device copy, a custom
// operator, a collective's reduction, a compiled kernel) runs that body in
// one scope, CpuKernelScope, with the state of the thread that launched it,
// captured at the launch. The body may run on the stream's worker thread or
// on a host thread that waits for the stream and runs the queue itself; both
// are "the worker" here, and the scope makes the two indistinguishable:
//
//   - nothing of the running thread leaks in: a dispatch or function mode,
//     the Python dispatcher or a profiler that a waiting host is inside
//     never sees the body's CPU operators (a logging mode would count work
//     it never launched; FakeTensorMode crashed the process);
//   - everything of the launching thread that a CPU kernel reads is there:
//     grad, inference and autocast modes, the thread count, the denormal
//     flags (Note [accinte kernels see their caller's state]);
//   - the body's warnings go to a handler the launch chose: dropped for a
//     queued kernel, collected and raised at the call by run_and_wait.
//
// A CUDA kernel sees none of the host's thread state; a CPU kernel standing
// in for one reads some of it, which is why the launching thread's part is
// carried and the running thread's part is shut out. c10 does the same for
// its own hops between threads with at::ThreadLocalState.
#include <csrc/emulation/CpuKernel.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>

#include <csrc/emulation/CpuAlias.h>

#include <exception>
#include <memory>

namespace at::native::accinte {
namespace {

thread_local bool t_in_cpu_kernel = false;

} // namespace

// LITERALINCLUDE START: EXECUTION KERNEL SCOPE
CpuKernelScope::CpuKernelScope(const CallerState& caller, c10::WarningHandler* warnings)
    : caller_(caller), warnings_(warnings), was_in_kernel_(std::exchange(t_in_cpu_kernel, true)) {}

CpuKernelScope::~CpuKernelScope() {
  t_in_cpu_kernel = was_in_kernel_;
}
// LITERALINCLUDE END: EXECUTION KERNEL SCOPE

DiscardWarnings& CpuKernelScope::discard() {
  static DiscardWarnings handler;
  return handler;
}

bool in_cpu_kernel() {
  return t_in_cpu_kernel;
}

size_t run_and_wait(const c10::accinte::AccInteStream& stream, std::function<void()> kernel,
                    const char* name, bool quiet) {
  auto error = std::make_shared<std::exception_ptr>();
  auto warned = std::make_shared<CollectWarnings>();
  c10::accinte::launch_kernel(stream, [kernel = std::move(kernel), error, warned,
                                       caller = CallerState::capture()]() {
    try {
      CpuKernelScope scope(caller, warned.get());
      kernel();
    } catch (...) {
      *error = std::current_exception();
    }
  }, name);
  stream.synchronize();
  if (!quiet) {
    for (const c10::Warning& warning : warned->warnings) {
      c10::warn(warning);
    }
  }
  if (*error) {
    std::rethrow_exception(*error);
  }
  return warned->warnings.size();
}

at::Tensor device_copy_of(const at::Tensor& host, const c10::accinte::AccInteStream& stream) {
  at::Tensor out = at::empty_strided(
      host.sizes(), host.strides(),
      at::TensorOptions().dtype(host.scalar_type()).device(stream.device()));
  if (out.numel() > 0) {
    launch_cpu_kernel(stream, [src = host, dst = cpu_alias(out)]() mutable {
      dst.copy_(src);
    }, "aten::copy_");
  }
  return out;
}

} // namespace at::native::accinte
