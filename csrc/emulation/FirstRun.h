#pragma once
// The first run of a call signature: synchronous, checked against the Meta
// kernel, recorded for later calls (LaunchCache.h). See Note [accinte
// fallback] in Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <csrc/emulation/LaunchCache.h>
#include <csrc/emulation/OpPlan.h>

#include <optional>
#include <string>

namespace at::native::accinte {

/// A meta tensor with the same storage size, sizes, strides, offset, dtype
/// and math bits as `t`, so a Meta kernel sees exactly what the CPU kernel
/// will; undefined for an undefined `t`.
at::Tensor meta_mirror(const at::Tensor& t);

/// What the Meta kernel says of a call of `op` with `args`: its returns, and
/// the mirrors of the written arguments as it left them; nullopt if it
/// throws. With `quiet`, the Meta kernel's warnings are dropped (the CPU
/// kernel raises the call's own).
std::optional<LaunchRecord> meta_record(const c10::OperatorHandle& op, const OpPlan& plan,
                                        c10::ArrayRef<c10::IValue> args, bool quiet);

/// Runs the first call of `signature` synchronously (run_sync: the CPU
/// kernel's errors and warnings reach the caller) and, if it succeeded,
/// records what it showed: the layouts of the outputs, whether later calls
/// may be queued, and whether the out= overload writes the functional
/// operator's bytes (run once more into outputs of the same layouts and
/// compared, for operators that draw no random numbers and write no
/// argument).
void run_first_call(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
                    std::string signature);

} // namespace at::native::accinte
