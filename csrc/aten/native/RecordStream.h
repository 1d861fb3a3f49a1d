#pragma once
// Tensor.record_stream for accinte (registered in ../AccInteExtra.cpp).

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// Declares that `stream` uses `self`'s memory, so the caching allocator
/// keeps the block from reuse after it is freed until the work queued on
/// `stream` at free time is done (DeviceAllocator::recordStream; see Note
/// [accinte caching allocator]). Throws unless `stream` is an accinte stream.
void record_stream(at::Tensor& self, c10::Stream stream);

} // namespace at::native::accinte
