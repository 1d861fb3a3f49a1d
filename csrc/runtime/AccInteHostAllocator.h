#pragma once
// AccInteHostAllocator: pinned host memory for accinte (acMallocHost: the
// runtime tracks it as pinned but does not lock its pages), cached
// by PyTorch's CachingHostAllocatorImpl and registered with
// REGISTER_HOST_ALLOCATOR(PrivateUse1, ...). Serves Tensor.pin_memory(),
// torch.accelerator.empty_host_cache() and non-blocking copies.
//
// A freed block returns to the cache and is handed out again only after the
// events recorded on the streams that used it (record_event) have completed.
// A block freed while a stream that used it is capturing is never handed out
// again (see AccInteHostAllocatorImpl::record_stream).

#include <ATen/core/CachingHostAllocator.h>

namespace c10::accinte {

/// The registered pinned-memory allocator (an at::HostAllocator).
C10_EXPORT at::HostAllocator* getHostAllocator();

/// True when `ptr` points into pinned memory from acMallocHost.
C10_EXPORT bool is_pinned_ptr(const void* ptr);

} // namespace c10::accinte
