#pragma once
// The arguments of one call, as the CPU kernel sees them: every accinte
// tensor replaced by a CPU alias of its memory (CpuAlias.h). One builder for
// every path of the engine: the asynchronous and synchronous fallbacks and
// the fallback for sparse and nested layouts.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <c10/util/SmallVector.h>

#include <csrc/emulation/CpuAlias.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace at::native::accinte {

/// An argument the operator writes (an out= tensor, an in-place `self`,
/// running statistics...).
struct WrittenArgument {
  at::Tensor device;  ///< the argument
  at::Tensor working; ///< what the CPU kernel writes; may be resized into host memory
  DeferredCpuAlias home; ///< a dense argument's bytes as they were; undefined for sparse/nested
};

/// What the CPU kernel of one call is given.
struct CpuArguments {
  // Few per call: kept inline, so that building them allocates nothing.
  torch::jit::Stack stack;                       ///< the arguments, accinte tensors aliased
  c10::SmallVector<WrittenArgument, 2> written;  ///< the accinte tensors the operator writes
  c10::SmallVector<at::Tensor, 4> device_tensors; ///< every dense accinte tensor or component
                                                  ///< passed, which results may alias (lies_in)
  /// (working, home) of every dense written argument: what `settle` brings
  /// home after the kernel. Inline for one: most operators write one tensor.
  using SettleList = c10::SmallVector<std::pair<at::Tensor, DeferredCpuAlias>, 1>;
  SettleList to_settle() const &;
  /// The same, moved out of `written` (for a launch that needs nothing else).
  SettleList to_settle() &&;
};

/// Where the memory of a call's CPU arguments comes from.
enum class HostMemory {
  kDevice,   ///< the device memory itself: CPU aliases, for kernels on a stream
  kStandIns, ///< fresh host memory holding made-up values: stand-ins that let
             ///< the calling thread run the CPU kernel to validate a call
             ///< without waiting for the device (FirstRun.h)
};

/// Builds the CPU arguments of a call of `schema` with `args`: accinte
/// tensors become CPU tensors of the same layout over `memory` (tensors
/// sharing a device storage share one host storage, see host_storage, so the
/// CPU kernel's overlap checks see what the call shares), accinte device
/// arguments become the CPU, host tensors stay. With `components`, sparse
/// and nested tensors become host aliases of their components
/// (LayoutAlias.h) and aliases carry their tensor's requires_grad flag (some
/// CPU kernels compute what their backward needs only then). With
/// kDevice, builds metadata only: no device memory is touched. Generators
/// are left to the caller (substitute_generators). Returns nullopt for
/// stand-ins of sparse or nested tensors, or of more than `max_bytes`.
std::optional<CpuArguments> cpu_arguments(const c10::FunctionSchema& schema,
                                          c10::ArrayRef<c10::IValue> args, HostMemory memory,
                                          bool components = false,
                                          size_t max_bytes = SIZE_MAX);

/// cpu_arguments over the device memory, which always succeeds.
CpuArguments cpu_aliases(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                         bool components = false);

} // namespace at::native::accinte
