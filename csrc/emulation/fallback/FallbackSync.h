#pragma once
// The global fallback's synchronous path: the CPU kernel on the same aliases
// as the asynchronous path, waited for. See Note [accinte fallback] in
// Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace at::native::accinte {

/// Runs `op` as a kernel on the current stream of the call's device and
/// waits for it: inputs are used in place; results the CPU kernel allocated
/// are copied to the device by kernels queued behind it, views of inputs
/// become views of the device tensors, sparse and nested results are rebuilt
/// component by component. Throws what the CPU kernel threw, with its type,
/// raises its warnings on the calling thread (returns how many), and refuses
/// (check_not_capturing) while the stream is capturing.
size_t run_sync(const c10::OperatorHandle& op, torch::jit::Stack* stack);

} // namespace at::native::accinte
