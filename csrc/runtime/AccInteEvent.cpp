#include <csrc/runtime/AccInteEvent.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>

#include <utility>

namespace c10::accinte {

AccInteEvent::AccInteEvent(bool enable_timing, bool interprocess)
    : enable_timing_(enable_timing), interprocess_(interprocess) {
  TORCH_CHECK(!(enable_timing && interprocess),
              "An interprocess accinte event cannot measure time (enable_timing=False)");
}

AccInteEvent::AccInteEvent(DeviceIndex device, const acIpcEventHandle_t& handle)
    : enable_timing_(false), interprocess_(true), device_(device) {
  AccInteGuard guard(device);
  ACCINTE_CHECK(acIpcOpenEventHandle(&event_, handle));
}

AccInteEvent::~AccInteEvent() {
  // In a child forked after the runtime started, the event is the parent's
  // and every runtime call is refused (Note [accinte fork safety]): an event
  // inherited with a Python object (a share kept by the reductions) is left
  // alone, as device memory is.
  if (event_ != nullptr && !in_bad_fork()) {
    ACCINTE_CHECK_WARN(acEventDestroy(event_));
  }
}

AccInteEvent::AccInteEvent(AccInteEvent&& other) noexcept
    : enable_timing_(other.enable_timing_),
      interprocess_(other.interprocess_),
      device_(std::exchange(other.device_, -1)),
      event_(std::exchange(other.event_, nullptr)) {}

AccInteEvent& AccInteEvent::operator=(AccInteEvent&& other) noexcept {
  if (this != &other) {
    this->~AccInteEvent();
    enable_timing_ = other.enable_timing_;
    interprocess_ = other.interprocess_;
    device_ = std::exchange(other.device_, -1);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void AccInteEvent::record(const AccInteStream& stream) {
  if (event_ == nullptr) {
    AccInteGuard guard(stream.device_index());
    const unsigned int flags = (enable_timing_ ? acEventDefault : acEventDisableTiming) |
                               (interprocess_ ? acEventInterprocess : 0u);
    ACCINTE_CHECK(acEventCreateWithFlags(&event_, flags));
    device_ = stream.device_index();
  }
  TORCH_CHECK(device_ == stream.device_index(), "Event was created on accinte:", int(device_),
              " and cannot be recorded on a stream of accinte:", int(stream.device_index()));
  ACCINTE_CHECK(acEventRecord(event_, stream.stream()));
}

acIpcEventHandle_t AccInteEvent::ipc_handle() const {
  TORCH_CHECK(interprocess_ && event_ != nullptr,
              "Only a recorded interprocess accinte event has an IPC handle");
  acIpcEventHandle_t handle{};
  ACCINTE_CHECK(acIpcGetEventHandle(&handle, event_));
  return handle;
}

bool AccInteEvent::query() const {
  if (event_ == nullptr) {
    return true;
  }
  return ACCINTE_QUERY(acEventQuery(event_));
}

void AccInteEvent::synchronize() const {
  if (event_ != nullptr) {
    ACCINTE_CHECK(acEventSynchronize(event_));
  }
}

void AccInteEvent::block(const AccInteStream& stream) const {
  if (event_ != nullptr) {
    ACCINTE_CHECK(acStreamWaitEvent(stream.stream(), event_, 0));
  }
}

} // namespace c10::accinte
