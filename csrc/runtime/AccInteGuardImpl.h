#pragma once
// AccInteGuardImpl: PyTorch's device-generic view of the accinte runtime
// (c10::impl::DeviceGuardImplInterface). c10::DeviceGuard, torch.Stream,
// torch.Event and torch.accelerator all reach the runtime through it.
// Registered for PrivateUse1 in AccInteGuardImpl.cpp.

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace c10::accinte {

struct AccInteGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr DeviceType static_type = DeviceType::PrivateUse1;

  AccInteGuardImpl() = default;
  explicit AccInteGuardImpl(DeviceType t);

  DeviceType type() const override { return static_type; }

  // Devices
  Device exchangeDevice(Device d) const override;
  Device getDevice() const override;
  void setDevice(Device d) const override;
  void uncheckedSetDevice(Device d) const noexcept override;
  DeviceIndex deviceCount() const noexcept override;
  DeviceCapability getDeviceCapability(Device d) const override;
  void synchronizeDevice(DeviceIndex device_index) const override;

  // Streams
  Stream getStream(Device d) const override;
  Stream getDefaultStream(Device d) const override;
  Stream getNewStream(Device d, int priority = 0) const override;
  Stream getStreamFromGlobalPool(Device d, bool isHighPriority = false) const override;
  Stream exchangeStream(Stream s) const override;
  void* getStreamNativeHandle(const Stream s) const override;
  bool queryStream(const Stream& stream) const override;
  void synchronizeStream(const Stream& stream) const override;
  void recordDataPtrOnStream(const DataPtr& data_ptr, const Stream& stream) const override;

  // Events: `event` is an acEvent_t created lazily by record().
  void record(void** event, const Stream& stream, DeviceIndex device_index,
              EventFlag flag) const override;
  void block(void* event, const Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  void destroyEvent(void* event, DeviceIndex device_index) const noexcept override;
  double elapsedTime(void* start, void* end, DeviceIndex device_index) const override;
};

} // namespace c10::accinte
