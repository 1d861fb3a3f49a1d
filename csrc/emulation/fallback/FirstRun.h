#pragma once
// The first call of a signature: the CPU kernel checked on host stand-ins
// at the call, then queued; run synchronously on the real arguments only
// where the stand-ins cannot decide. What it showed is recorded for later
// calls (LaunchCache.h). See Note [accinte fallback] in Fallback.cpp.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <csrc/emulation/fallback/LaunchCache.h>
#include <csrc/emulation/fallback/OpPlan.h>
#include <csrc/runtime/AccInteStream.h>

#include <functional>
#include <optional>
#include <string>

namespace at::native::accinte {

/// A meta tensor with the same storage size, sizes, strides, offset, dtype
/// and math bits as `t`, so a Meta kernel sees exactly what the CPU kernel
/// will; undefined for an undefined `t`.
at::Tensor meta_mirror(const at::Tensor& t);

/// What the Meta kernel says of a call of `op` with `args`: its returns, and
/// the mirrors of the written arguments as it left them (`from_meta`);
/// nullopt if it throws. To check a first run (not `planning`), its C++
/// warnings are dropped (the CPU kernel raises the call's own) and a Python
/// Meta kernel does not run (OpPlan::meta_is_python: the layouts come from
/// the CPU kernel, and the operator's shapes do not depend on data, or it
/// would be in OpPlan's data-dependent list), except for operators taking
/// index lists, whose boolean masks only the Meta kernel recognises. For in-place and out=
/// overloads (OpPlan::outputs_given) no Meta kernel runs: the record holds
/// the written arguments as they are. `planning` is for a capturing stream,
/// where the record plans the launch itself.
std::optional<LaunchRecord> meta_record(const c10::OperatorHandle& op, const OpPlan& plan,
                                        c10::ArrayRef<c10::IValue> args, bool planning);

/// Validates the first call of a signature on the host, without waiting for
/// the device: runs the CPU kernel on stand-ins (CPU tensors of the same
/// layouts, sharing storage as the arguments do, holding made-up values) on
/// the calling thread. Returns the record for the signature if that run
/// succeeded without a warning and agrees with `meta` (what the Meta kernel
/// said), with `out_route` set if the out= overload, run on the same
/// stand-ins into outputs of the same layouts, wrote the same bytes; nullopt
/// otherwise (then run_first_call decides on the real arguments).
std::optional<LaunchRecord> check_on_stand_ins(const c10::OperatorHandle& op, const OpPlan& plan,
                                               c10::ArrayRef<c10::IValue> args,
                                               const LaunchRecord& meta);

/// Runs the first call of `signature` synchronously on its real arguments
/// (run_sync: the CPU kernel's errors and warnings reach the caller) and, if
/// it succeeded, records what it showed: the layouts of the outputs, and
/// whether later calls may be queued (no warning, no result aliasing an
/// input, agreement with `meta`). Such calls run the functional operator.
void run_first_call(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
                    std::string signature, const std::optional<LaunchRecord>& meta);

} // namespace at::native::accinte
