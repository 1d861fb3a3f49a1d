#pragma once
// What another part of the backend attaches to the device's life, without
// the runtime knowing it: the emulation's kernel scratch cache is made when
// the device is initialised and released when the device's cache is.

#include <c10/macros/Export.h>

namespace c10::accinte {

/// Either function may be null. `init` runs once, at the device's lazy
/// initialisation (AccInteHooks::init), on the initialising thread;
/// `empty_cache` runs at every emptyCache of the device allocator
/// (torch.accinte.empty_cache(), torch.accelerator.memory.empty_cache()),
/// after the device's free blocks went back. Neither may throw.
struct LifecycleHooks {
  void (*init)() = nullptr;
  void (*empty_cache)() = nullptr;
};

/// Registers `hooks`, typically from a static initializer of the library
/// that owns them. Thread-safe; at most 8 registrations.
C10_EXPORT void add_lifecycle_hooks(LifecycleHooks hooks);

/// Runs every registered `init` (AccInteHooks::init calls it).
void run_init_hooks();

/// Runs every registered `empty_cache` (the device allocator calls it).
void run_empty_cache_hooks();

} // namespace c10::accinte
