#pragma once
// LaunchCache: what the first run of a call signature showed, so that later
// calls with the same signature can be launched asynchronously and still
// behave exactly as the CPU does. See Note [accinte fallback].
//
// A signature is what a CPU kernel can see of a call without reading tensor
// values: the operator, every tensor's sizes, strides, offset, storage size,
// dtype, device and math bits, which tensors share a storage, every other
// argument's value, and the global settings that change what kernels do
// (deterministic algorithms, the default dtype). Every error and warning a
// CPU kernel raises for a call, except those that depend on values (a
// singular matrix, an index out of range), is a function of its signature;
// so is the layout of every output. The first call of a signature is
// therefore checked at the call (on host stand-ins, or, where they cannot
// decide, by running it synchronously: FirstRun.h), so that its errors and
// warnings reach the caller with their own types, and its outcome is
// recorded here; only a call whose signature was checked clean is queued
// without a check.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace at::native::accinte {

/// What the first call of a signature showed (checked on stand-ins or run).
struct LaunchRecord {
  /// Per return: a meta tensor (or list) with the layout the CPU gave it
  /// (sizes, strides, offset for a view, dtype).
  std::vector<c10::IValue> returns;
  /// Per argument: for those the operator writes, a meta mirror of the
  /// argument as the call left it (an out= tensor the CPU resized); None
  /// for the others.
  std::vector<c10::IValue> mirrors;
  /// False when later calls must run synchronously too: the CPU kernel
  /// warned (a queued kernel's warnings could not reach the caller), its
  /// outputs alias its inputs, or the Meta kernel (which cannot see values)
  /// disagrees with it, so the output shapes may depend on the data.
  bool asynchronous = false;
  /// The operator's out= overload, run into outputs with these layouts,
  /// gave the functional operator's bytes; otherwise later calls run the
  /// functional operator and copy its results into the outputs.
  bool out_route = false;
  /// For a record that only plans (meta_record): the Meta kernel computed
  /// it, rather than taking the written arguments as they are.
  bool from_meta = false;
};

/// Writes the signature of a call into `key`, replacing its contents but
/// keeping its capacity (a caller that keeps one buffer per thread builds
/// signatures without allocating). False if an argument is of a kind it does
/// not describe (then every call runs synchronously).
bool launch_signature(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                      std::string& key);

/// The record for `signature`, or null. Thread-safe; a signature the calling
/// thread has looked up before is found without taking a lock (Note [accinte
/// launch cache without a lock] in LaunchCache.cpp).
std::shared_ptr<const LaunchRecord> lookup_launch(const std::string& signature);

/// Records the first run of `signature`. Thread-safe.
void remember_launch(std::string signature, LaunchRecord record);

} // namespace at::native::accinte
