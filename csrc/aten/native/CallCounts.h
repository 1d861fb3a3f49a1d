#pragma once
// Call counters: a test hook, not part of any registration form.
//
// Some registration forms change which kernel runs without changing the
// answer (a DispatchStub, an override of a CompositeImplicitAutograd
// default, a per-operator fallback). Their kernels count their calls here so
// that a test can tell them apart from the kernel PyTorch would otherwise
// pick. Python reads a counter through `torch.ops.accinte._call_count(name)`
// (registered in ../AccInteCallCounts.cpp), so no binding is needed.

#include <cstdint>
#include <string_view>

namespace at::native::accinte {

/// Adds one to the counter `name`. Thread-safe; cheap enough for every call.
void count_call(std::string_view name);

/// How many times `count_call(name)` ran in this process; 0 for a name never
/// counted.
int64_t call_count(std::string_view name);

} // namespace at::native::accinte
