#pragma once
// accinte's implementation of `abs_stub` (ATen/native/UnaryOps.h).
// Registered in ../AccInteDispatchStub.cpp.

#include <ATen/TensorIterator.h>

namespace at::native::accinte {

/// The element loop of abs for a TensorIterator over accinte tensors, queued
/// as a kernel on the current stream of the iterator's device. `iter` has
/// been built by the caller (at::native::abs_out): its output is allocated
/// and has its final shape, its operands share one dtype. Returns before the
/// kernel runs; the operands' memory stays valid in stream order.
void abs_kernel(at::TensorIteratorBase& iter);

} // namespace at::native::accinte
