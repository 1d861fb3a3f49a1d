#pragma once
// AccInteDeviceAllocator: the c10::DeviceAllocator behind every accinte
// tensor's storage (REGISTER_ALLOCATOR(PrivateUse1, ...)).
//
// It allocates straight from the runtime (acMalloc/acFree) and keeps
// statistics with the keys and meaning of CUDA's caching allocator, which is
// what torch.accelerator.memory_stats and friends read. Because acFree waits
// for the device's streams, a block can never be reused while a stream still
// uses it, so recordStream has nothing to track.

#include <c10/core/CachingDeviceAllocator.h>

namespace c10::accinte {

/// Stable, process-wide allocator instance (never destroyed).
C10_EXPORT c10::DeviceAllocator* getDeviceAllocator();

/// Formats a byte count for error messages ("1.50 GiB").
C10_EXPORT std::string format_bytes(size_t bytes);

} // namespace c10::accinte
