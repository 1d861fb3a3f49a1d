#include <csrc/runtime/AccInteGuardImpl.h>

#include <c10/core/CachingDeviceAllocator.h>
#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteHostWait.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace c10::accinte {

AccInteGuardImpl::AccInteGuardImpl(DeviceType t) {
  TORCH_CHECK(t == static_type, "AccInteGuardImpl initialized with non-accinte DeviceType: ", t);
}

// LITERALINCLUDE START: GUARD IMPL DEVICES
Device AccInteGuardImpl::exchangeDevice(Device d) const {
  TORCH_CHECK(d.is_privateuseone(), "Expected an accinte device, got ", d);
  return Device(static_type, c10::accinte::exchange_device(d.index()));
}

Device AccInteGuardImpl::getDevice() const {
  return Device(static_type, current_device());
}

void AccInteGuardImpl::setDevice(Device d) const {
  TORCH_CHECK(d.is_privateuseone(), "Expected an accinte device, got ", d);
  set_device(d.index());
}

void AccInteGuardImpl::uncheckedSetDevice(Device d) const noexcept {
  ACCINTE_CHECK_WARN(acSetDevice(d.index()));
}

DeviceIndex AccInteGuardImpl::deviceCount() const noexcept {
  return device_count();
}
// LITERALINCLUDE END: GUARD IMPL DEVICES

DeviceCapability AccInteGuardImpl::getDeviceCapability(Device d) const {
  check_device_index(d.index());
  // Every dtype PyTorch has: the kernels are the host CPU's, and the
  // quantized ones run through the layout fallback (Note [accinte quantized
  // tensors]). A device reports here what its kernels take.
  return DeviceCapability();
}

void AccInteGuardImpl::synchronizeDevice(DeviceIndex device_index) const {
  device_synchronize(device_index);
}

// LITERALINCLUDE START: STREAM GUARD IMPL
Stream AccInteGuardImpl::getStream(Device d) const {
  return getCurrentAccInteStream(d.index()).unwrap();
}

Stream AccInteGuardImpl::getDefaultStream(Device d) const {
  return getDefaultAccInteStream(d.index()).unwrap();
}

Stream AccInteGuardImpl::getNewStream(Device d, int priority) const {
  return getStreamFromPool(priority, d.index()).unwrap();
}

Stream AccInteGuardImpl::getStreamFromGlobalPool(Device d, bool isHighPriority) const {
  return getStreamFromPool(isHighPriority, d.index()).unwrap();
}

Stream AccInteGuardImpl::exchangeStream(Stream s) const {
  const AccInteStream stream(s);
  const AccInteStream previous = getCurrentAccInteStream(stream.device_index());
  setCurrentAccInteStream(stream);
  return previous.unwrap();
}
// LITERALINCLUDE END: STREAM GUARD IMPL

void* AccInteGuardImpl::getStreamNativeHandle(const Stream s) const {
  return AccInteStream(s).stream();
}

bool AccInteGuardImpl::queryStream(const Stream& stream) const {
  return AccInteStream(stream).query();
}

void AccInteGuardImpl::synchronizeStream(const Stream& stream) const {
  AccInteStream(stream).synchronize();
}

void AccInteGuardImpl::recordDataPtrOnStream(const DataPtr& data_ptr,
                                             const Stream& stream) const {
  c10::getDeviceAllocator(static_type)->recordStream(data_ptr, stream);
}

// LITERALINCLUDE START: EVENT RECORD AND BLOCK
void AccInteGuardImpl::record(void** event, const Stream& stream, DeviceIndex device_index,
                              EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
              "Event device index ", int(device_index),
              " does not match recording stream's device index ", int(stream.device_index()));
  const AccInteStream accinte_stream(stream);
  AccInteGuard guard(accinte_stream.device_index());
  auto* ac_event = static_cast<acEvent_t*>(static_cast<void*>(event));
  if (*ac_event == nullptr) {
    // PYTORCH_DEFAULT is torch's "no timing" event; BACKEND_DEFAULT asks for
    // the backend's default, which records timestamps (as cudaEventDefault).
    const unsigned flags = flag == EventFlag::PYTORCH_DEFAULT ? acEventDisableTiming
                                                              : acEventDefault;
    ACCINTE_CHECK(acEventCreateWithFlags(ac_event, flags));
  }
  ACCINTE_CHECK(acEventRecord(*ac_event, accinte_stream.stream()));
}

void AccInteGuardImpl::block(void* event, const Stream& stream) const {
  if (event == nullptr) {
    return;
  }
  ACCINTE_CHECK(acStreamWaitEvent(AccInteStream(stream).stream(),
                                  static_cast<acEvent_t>(event), 0));
}
// LITERALINCLUDE END: EVENT RECORD AND BLOCK

bool AccInteGuardImpl::queryEvent(void* event) const {
  if (event == nullptr) {
    return true;
  }
  return ACCINTE_QUERY(acEventQuery(static_cast<acEvent_t>(event)));
}

void AccInteGuardImpl::synchronizeEvent(void* event) const {
  if (event != nullptr) {
    HostWaitGuard no_gil; // Note [accinte host waits and the GIL]
    ACCINTE_CHECK(acEventSynchronize(static_cast<acEvent_t>(event)));
  }
  release_finished_kernels();
}

void AccInteGuardImpl::destroyEvent(void* event, DeviceIndex device_index) const noexcept {
  if (event != nullptr) {
    ACCINTE_CHECK_WARN(acEventDestroy(static_cast<acEvent_t>(event)));
  }
}

double AccInteGuardImpl::elapsedTime(void* start, void* end, DeviceIndex device_index) const {
  TORCH_CHECK(start != nullptr && end != nullptr,
              "Both events must be recorded before calculating elapsed time.");
  float ms = 0;
  ACCINTE_CHECK(acEventElapsedTime(&ms, static_cast<acEvent_t>(start),
                                   static_cast<acEvent_t>(end)));
  return static_cast<double>(ms);
}

// LITERALINCLUDE START: GUARD IMPL REGISTRATION
C10_REGISTER_GUARD_IMPL(PrivateUse1, AccInteGuardImpl);
// LITERALINCLUDE END: GUARD IMPL REGISTRATION

} // namespace c10::accinte
