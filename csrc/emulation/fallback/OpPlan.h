#pragma once
// OpPlan: what the fallback needs to know about an operator to run it
// asynchronously, worked out once per operator from its schema.
// See Note [accinte fallback] in Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <vector>

namespace at::native::accinte {

struct OpPlan {
  /// How a return relates to the arguments.
  enum class Return {
    kFresh,    // a new tensor (or list): allocated up front, written by the kernel
    kMutated,  // the mutated argument `arg` itself (in-place and out= ops)
    kView,     // a view of argument `arg` (no kernel needed for it)
  };
  struct ReturnInfo {
    Return kind = Return::kFresh;
    int arg = -1;
    bool is_list = false;
  };

  /// False when the operator can only run synchronously: its output shapes
  /// depend on data, its CUDA kernel waits for its inputs, it has no Meta
  /// kernel to compute them, or it returns something other than tensors.
  bool can_run_async = false;
  std::vector<ReturnInfo> returns;
  /// Indices of arguments the operator writes to.
  std::vector<int> mutated_args;
  /// For operators with fresh returns: the overload that writes into
  /// preallocated outputs, called with the operator's arguments followed by
  /// one output per return. Used only for call signatures where it was shown
  /// to write the functional operator's bytes (LaunchRecord::out_route).
  std::optional<c10::OperatorHandle> out_variant;
  /// Operators that take host tensors of any size (index tensors).
  bool accepts_host_tensors = false;
  /// The operator takes a generator: it draws random numbers.
  bool draws_random = false;
  /// The Meta kernel is written in Python (torch/_meta_registrations.py):
  /// correct, but its first use imports half of torch's Python code, and
  /// every call costs tens of microseconds; the engine runs it only to plan
  /// a call while a stream captures.
  bool meta_is_python = false;
  /// The operator takes a list of optional tensors (`Tensor?[] indices`):
  /// boolean masks among them make output shapes depend on the data, which
  /// only the Meta kernel (raising on them) tells apart.
  bool takes_indices = false;
  /// The CPU kernel indexes memory with integer tensors another kernel made
  /// (embedding_bag's and max pooling's backwards) without checking them: it
  /// is never run on host stand-ins, whose made-up values could be out of
  /// bounds; the first call of a signature runs on the real arguments.
  bool trusts_its_indices = false;
  /// Every return is a written argument (in-place and out= overloads): the
  /// outputs exist before the call.
  bool outputs_given = false;
  /// The index of a `bool check_errors` argument (linalg's `_ex` operators),
  /// or -1. A call with it true runs synchronously: CUDA's kernels then wait
  /// for the `info` tensor (_linalg_check_errors) and raise a singular or
  /// non-positive-definite input at the call, and so does accinte.
  int check_errors_arg = -1;
};

/// The plan of `op`, computed on first use and cached; thread-safe.
const OpPlan& plan_for(const c10::OperatorHandle& op);

} // namespace at::native::accinte
