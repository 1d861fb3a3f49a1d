#pragma once
// The CPU allocator's cache for the scratch memory of CPU kernels run as
// accinte kernels: Note [accinte kernel scratch memory] (KernelScratch.cpp).

#include <cstddef>

namespace at::native::accinte {

/// What the cache holds and has done, for tests and the docs' figures.
struct KernelScratchStats {
  size_t cached_bytes = 0; // free blocks kept for the next kernel
  size_t hits = 0;         // kernel allocations served from the cache
  size_t misses = 0;       // kernel allocations the CPU's allocator made
  size_t returns = 0;      // blocks freed back into the cache
};

KernelScratchStats kernel_scratch_stats();

/// Gives every free block of the cache back to the CPU's allocator
/// (torch.accinte.empty_cache()).
void release_kernel_scratch();

} // namespace at::native::accinte
