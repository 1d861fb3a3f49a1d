#pragma once
// The global fallback's synchronous path: the CPU kernel on the same aliases
// as the asynchronous path, waited for, for calls whose output shapes cannot
// be known in advance. See Note [accinte fallback] in Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <csrc/emulation/MetaCache.h>
#include <csrc/emulation/OpPlan.h>

#include <string>
#include <vector>

namespace at::native::accinte {

/// A Python Meta kernel's result for a signature seen for the first time:
/// the call runs synchronously, then validate_and_remember checks it.
struct PendingMeta {
  std::string signature;
  MetaResult result;
};

/// Runs `op` as a kernel on the current stream of the call's device and
/// waits for it: inputs are used in place; results the CPU kernel allocated
/// are copied to the device by kernels queued behind it, views of inputs
/// become views of the device tensors, sparse and nested results are rebuilt
/// component by component. Throws what the CPU kernel threw, with its type,
/// and refuses (check_not_capturing) while the stream is capturing.
void run_sync(const c10::OperatorHandle& op, torch::jit::Stack* stack);

/// After run_sync ran the first call of a signature: caches the Meta result
/// in `pending`, trusted only if it agrees with the returns on `stack` and
/// the mutated arguments in `args` (the call's arguments, kept from before
/// the call) that the CPU kernel really produced.
void validate_and_remember(const OpPlan& plan, const std::vector<c10::IValue>& args,
                           const torch::jit::Stack& stack, PendingMeta pending);

} // namespace at::native::accinte
