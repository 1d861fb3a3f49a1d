#pragma once
// MetaCache: remembers what an operator's Meta kernel computed, per call
// signature, for operators whose Meta kernel is written in Python.
//
// A Python Meta kernel costs tens to hundreds of microseconds, more than the
// kernels it plans for; without a cache such operators would rather wait for
// the device (see Note [accinte fallback]). What a Meta kernel computes
// depends only on what it can see: sizes, strides, offsets, dtypes and
// non-tensor arguments, never tensor values. So its result can be reused for
// every later call with the same signature, which in a training loop is every
// call after the first. The first call of a signature runs synchronously and
// checks the Meta kernel's shapes and dtypes against what the CPU kernel
// really returned; only a result that agrees is used for later calls. Only
// successful runs are cached: an invalid call misses and meets the error.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>
#include <vector>

namespace at::native::accinte {

struct MetaResult {
  std::vector<c10::IValue> returns; // meta tensors (or lists) per return
  std::vector<c10::IValue> mirrors; // meta mirrors of the arguments after the call
  /// False when the first call showed that the CPU kernel's outputs differ
  /// from what the Meta kernel says (some Python Meta kernels follow CUDA's
  /// conventions: other result dtypes, saved statistics that the CPU leaves
  /// empty); such calls always take the synchronous path.
  bool trusted = true;
};

/// The signature key of a call, or nullopt if an argument is of a kind the
/// cache does not describe (then the call is not cached).
std::optional<std::string> meta_signature(const c10::OperatorHandle& op,
                                          c10::ArrayRef<c10::IValue> args);

/// The cached result for `key`, if any.
std::optional<MetaResult> lookup_meta(const std::string& key);

/// Stores a successful Meta run.
void remember_meta(std::string key, MetaResult result);

} // namespace at::native::accinte
