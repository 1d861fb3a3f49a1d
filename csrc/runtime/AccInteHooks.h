#pragma once
// AccInteHooks: the at::PrivateUse1HooksInterface of accinte, PyTorch's entry
// into the backend for lazy initialisation, generators, pinned memory and
// pointer queries. Registered in AccInteHooks.cpp.

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace c10::accinte {

// LITERALINCLUDE START: HOOKS INTERFACE
struct AccInteHooks final : public at::PrivateUse1HooksInterface {
  /// Lazy initialisation (torch.accinte.init / first device use): checks the
  /// runtime is usable in this process and throws a clear error if not.
  void init() const override;
  bool isBuilt() const override { return true; }
  bool isAvailable() const override;
  bool hasPrimaryContext(DeviceIndex device_index) const override;

  DeviceIndex deviceCount() const override;
  void setCurrentDevice(DeviceIndex device) const override;
  DeviceIndex getCurrentDevice() const override;
  DeviceIndex exchangeDevice(DeviceIndex device) const override;
  DeviceIndex maybeExchangeDevice(DeviceIndex device) const override;

  const at::Generator& getDefaultGenerator(DeviceIndex device_index) const override;
  at::Generator getNewGenerator(DeviceIndex device_index = -1) const override;

  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  at::Allocator* getPinnedMemoryAllocator() const override;

  /// Grows or shrinks a storage in place (Tensor.untyped_storage().resize_()).
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};
// LITERALINCLUDE END: HOOKS INTERFACE

} // namespace c10::accinte
