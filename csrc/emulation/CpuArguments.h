#pragma once
// The arguments of one call, as the CPU kernel sees them: every accinte
// tensor replaced by a CPU alias of its memory (CpuAlias.h). One builder for
// every path of the engine: the asynchronous and synchronous fallbacks and
// the fallback for sparse and nested layouts.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <utility>
#include <vector>

namespace at::native::accinte {

/// An argument the operator writes (an out= tensor, an in-place `self`,
/// running statistics...).
struct WrittenArgument {
  at::Tensor device;  ///< the argument
  at::Tensor working; ///< what the CPU kernel writes; may be resized into host memory
  at::Tensor home;    ///< a dense argument's bytes as they were; undefined for sparse/nested
};

/// What the CPU kernel of one call is given.
struct CpuArguments {
  torch::jit::Stack stack;              ///< the arguments, accinte tensors aliased
  std::vector<WrittenArgument> written; ///< the accinte tensors the operator writes
  std::vector<at::Tensor> device_tensors; ///< every dense accinte tensor or component passed,
                                          ///< which results may alias (lies_in)
  /// (working, home) of every dense written argument: what `settle` brings
  /// home after the kernel.
  std::vector<std::pair<at::Tensor, at::Tensor>> to_settle() const;
};

/// Builds the CPU arguments of a call of `schema` with `args`: accinte
/// tensors become CPU aliases (tensors sharing a device storage share one
/// host storage, see host_storage), accinte device arguments become the CPU,
/// host tensors stay. With `components`, sparse and nested tensors become
/// host aliases of their components (LayoutAlias.h) and aliases carry their
/// tensor's requires_grad flag (some CPU kernels compute what their backward
/// needs only then). Builds metadata only: no device memory is touched.
/// Generators are left to substitute_generators.
CpuArguments cpu_arguments(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                           bool components = false);

} // namespace at::native::accinte
