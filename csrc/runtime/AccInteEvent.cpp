#include <csrc/runtime/AccInteEvent.h>

#include <csrc/runtime/AccInteException.h>
#include <csrc/runtime/AccInteGuard.h>

#include <utility>

namespace c10::accinte {

AccInteEvent::~AccInteEvent() {
  if (event_ != nullptr) {
    ACCINTE_CHECK_WARN(acEventDestroy(event_));
  }
}

AccInteEvent::AccInteEvent(AccInteEvent&& other) noexcept
    : enable_timing_(other.enable_timing_),
      device_(std::exchange(other.device_, -1)),
      event_(std::exchange(other.event_, nullptr)) {}

AccInteEvent& AccInteEvent::operator=(AccInteEvent&& other) noexcept {
  if (this != &other) {
    this->~AccInteEvent();
    enable_timing_ = other.enable_timing_;
    device_ = std::exchange(other.device_, -1);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void AccInteEvent::record(const AccInteStream& stream) {
  if (event_ == nullptr) {
    AccInteGuard guard(stream.device_index());
    ACCINTE_CHECK(acEventCreateWithFlags(
        &event_, enable_timing_ ? acEventDefault : acEventDisableTiming));
    device_ = stream.device_index();
  }
  TORCH_CHECK(device_ == stream.device_index(), "Event was created on accinte:", int(device_),
              " and cannot be recorded on a stream of accinte:", int(stream.device_index()));
  ACCINTE_CHECK(acEventRecord(event_, stream.stream()));
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
