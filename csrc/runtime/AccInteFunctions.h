#pragma once
// Device management: the C++ face of acGetDeviceCount / acSetDevice /
// acDeviceSynchronize, named like c10/cuda/CUDAFunctions.h. Python reaches
// these through torch.accelerator and the guard; nothing here takes the GIL.

#include <accinte/accinte.h>
#include <c10/core/Device.h>

namespace c10::accinte {

/// Number of accinte devices (ACCINTE_DEVICE_COUNT), asked once and cached.
/// Never throws: a runtime that cannot be used reports 0 devices, as the
/// DeviceGuardImplInterface contract requires. A child forked after the count
/// was cached keeps the parent's count, as torch.cuda's does; using a device
/// there fails at lazy initialisation instead.
C10_EXPORT DeviceIndex device_count() noexcept;

/// Throws a c10::Error naming `device` and the valid range unless
/// 0 <= device < device_count().
C10_EXPORT void check_device_index(DeviceIndex device);

/// `device`, or the current device when `device` is -1 (what an accinte
/// torch.device without an index carries). Throws like check_device_index
/// for any other index out of range: -2 and below too, and the wrapped
/// indices torch.device("accinte:128") produces (DeviceIndex is 8 bits).
C10_EXPORT DeviceIndex resolve_device_index(DeviceIndex device);

/// The calling thread's current device.
C10_EXPORT DeviceIndex current_device();

/// True in a child forked from a process whose runtime was in use: the
/// runtime refuses every call there, and the allocators' tables must not be
/// touched either, since another thread of the parent may have held their
/// locks at the moment of fork(). See Note [accinte fork safety].
C10_EXPORT bool in_bad_fork() noexcept;

/// Makes `device` current for the calling thread. Throws on a bad index.
C10_EXPORT void set_device(DeviceIndex device);

/// Makes `device` current and returns the previous current device.
C10_EXPORT DeviceIndex exchange_device(DeviceIndex device);

/// Like exchange_device, for restoring a device saved earlier (torch's
/// MaybeExchangeDevice contract: -1 means "no device was saved").
C10_EXPORT DeviceIndex maybe_exchange_device(DeviceIndex device);

/// Blocks the calling thread until every stream of `device` is idle.
C10_EXPORT void device_synchronize(DeviceIndex device);

/// True once `device` has been used in this process (made current, or memory
/// or a stream created on it): the emulation of CUDA's primary context.
C10_EXPORT bool has_primary_context(DeviceIndex device);

/// The runtime's description of `device` (acGetDeviceProperties).
C10_EXPORT acDeviceProp get_device_properties(DeviceIndex device);

/// Records that `device` is in use; called by everything that touches it.
C10_EXPORT void mark_device_used(DeviceIndex device);

} // namespace c10::accinte
