#pragma once
// The CPU allocator's cache for the scratch memory of CPU kernels run as
// accinte kernels: Note [accinte kernel scratch memory] (KernelScratch.cpp).

#include <cstddef>

namespace at::native::accinte {

/// What the cache holds and has done, for tests and the docs' figures.
struct KernelScratchStats {
  bool installed = false;  // the CPU allocator is wrapped (the device is initialised)
  size_t cached_bytes = 0; // free blocks kept for the next kernel
  size_t hits = 0;         // kernel allocations served from the cache
  size_t misses = 0;       // kernel allocations the CPU's allocator made
  size_t returns = 0;      // blocks freed back into the cache
};

/// The cache's figures (all zero before the device is initialised). The
/// cache gives its free blocks back to the CPU's allocator at the device
/// allocator's empty_cache (c10::accinte::add_lifecycle_hooks).
KernelScratchStats kernel_scratch_stats();

} // namespace at::native::accinte
