#include <csrc/runtime/AccInteGenerator.h>

#include <ATen/CPUGeneratorImpl.h>
#include <csrc/runtime/AccInteFunctions.h>

#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {

AccInteGeneratorImpl::AccInteGeneratorImpl(DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(Device(DeviceType::PrivateUse1, device),
                         DispatchKeySet(DispatchKey::PrivateUse1)),
      engine_(at::detail::createCPUGenerator(seed)) {}

// Each forwarding method locks the engine: kernels running on a stream lock
// it while they draw numbers.
void AccInteGeneratorImpl::set_current_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(engine_.mutex());
  engine_.set_current_seed(seed);
}

// See Note [accinte generator offset].
void AccInteGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(offset == 0, "accinte generators have no offset: their engine's position is part ",
              "of their state, so use get_state()/set_state() instead of set_offset(", offset,
              ")");
}

uint64_t AccInteGeneratorImpl::get_offset() const {
  return 0;
}

uint64_t AccInteGeneratorImpl::current_seed() const {
  std::lock_guard<std::mutex> lock(engine_.mutex());
  return engine_.current_seed();
}

uint64_t AccInteGeneratorImpl::seed() {
  std::lock_guard<std::mutex> lock(engine_.mutex());
  return engine_.seed();
}

void AccInteGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  std::lock_guard<std::mutex> lock(engine_.mutex());
  engine_.unsafeGetGeneratorImpl()->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> AccInteGeneratorImpl::get_state() const {
  std::lock_guard<std::mutex> lock(engine_.mutex());
  return engine_.unsafeGetGeneratorImpl()->get_state();
}

AccInteGeneratorImpl* AccInteGeneratorImpl::clone_impl() const {
  auto* copy = new AccInteGeneratorImpl(device().index());
  std::lock_guard<std::mutex> lock(engine_.mutex());
  copy->engine_ = engine_.clone();
  return copy;
}

const at::Generator& getDefaultAccInteGenerator(DeviceIndex device) {
  struct Defaults {
    std::vector<std::once_flag> created;
    std::vector<at::Generator> generators;
    explicit Defaults(size_t n) : created(n), generators(n) {}
  };
  // Leaked on purpose: generators outlive every static user at exit.
  static auto* defaults = new Defaults(device_count());
  if (device < 0) {
    device = current_device();
  }
  check_device_index(device);
  std::call_once(defaults->created[device], [&] {
    defaults->generators[device] = at::make_generator<AccInteGeneratorImpl>(device);
  });
  return defaults->generators[device];
}

at::Generator createAccInteGenerator(DeviceIndex device) {
  if (device < 0) {
    device = current_device();
  }
  check_device_index(device);
  return at::make_generator<AccInteGeneratorImpl>(device);
}

} // namespace c10::accinte
