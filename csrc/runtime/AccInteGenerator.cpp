#include <csrc/runtime/AccInteGenerator.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGraphsUtils.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace c10::accinte {
namespace {

constexpr size_t kStateSize = 2 * sizeof(uint64_t);

// SplitMix64: spreads (seed, offset) pairs over the engine's seed space.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

AccInteGeneratorImpl::AccInteGeneratorImpl(DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(Device(DeviceType::PrivateUse1, device),
                         DispatchKeySet(DispatchKey::PrivateUse1)),
      seed_(seed) {}

void AccInteGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void AccInteGeneratorImpl::set_offset(uint64_t offset) {
  offset_ = offset;
}

uint64_t AccInteGeneratorImpl::get_offset() const {
  return offset_;
}

uint64_t AccInteGeneratorImpl::current_seed() const {
  return seed_;
}

uint64_t AccInteGeneratorImpl::seed() {
  const uint64_t random = c10::detail::getNonDeterministicRandom();
  set_current_seed(random);
  return random;
}

// LITERALINCLUDE START: GENERATOR STATE
void AccInteGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                  static_cast<size_t>(new_state.numel()) == kStateSize,
              "accinte RNG state must be a ByteTensor of ", kStateSize,
              " bytes (seed, offset), got ", new_state.numel(), " elements of ",
              new_state.dtype());
  TORCH_CHECK(new_state.device().is_cpu(), "accinte RNG state must be a CPU tensor");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, bytes, sizeof(uint64_t));
  std::memcpy(&offset_, bytes + sizeof(uint64_t), sizeof(uint64_t));
}

c10::intrusive_ptr<c10::TensorImpl> AccInteGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateSize)}, at::kByte);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return state.getIntrusivePtr();
}
// LITERALINCLUDE END: GENERATOR STATE

// LITERALINCLUDE START: GENERATOR KERNEL ENGINE
uint64_t AccInteGeneratorImpl::engine_seed(uint64_t seed, uint64_t offset) {
  return mix(seed ^ mix(offset));
}
// LITERALINCLUDE END: GENERATOR KERNEL ENGINE

// LITERALINCLUDE START: GRAPH RNG CAPTURE
at::Generator AccInteGeneratorImpl::next_kernel_engine() {
  const CaptureId_t capture = current_capture_id(getCurrentAccInteStream(device().index()));
  if (capture != 0) {
    // Seeded by each replay: see Note [accinte graph-safe random numbers].
    at::Generator engine = at::detail::createCPUGenerator(0);
    if (note_random_engine(capture, c10::intrusive_ptr<AccInteGeneratorImpl>::reclaim_copy(this),
                           engine)) {
      return engine;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t offset = offset_++;
  return at::detail::createCPUGenerator(engine_seed(seed_, offset));
}

std::pair<uint64_t, uint64_t> AccInteGeneratorImpl::reserve_offsets(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t base = offset_;
  offset_ += count;
  return {seed_, base};
}
// LITERALINCLUDE END: GRAPH RNG CAPTURE

AccInteGeneratorImpl* AccInteGeneratorImpl::clone_impl() const {
  auto* copy = new AccInteGeneratorImpl(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

// LITERALINCLUDE START: GENERATOR DEFAULTS
const at::Generator& getDefaultAccInteGenerator(DeviceIndex device) {
  struct Defaults {
    std::vector<std::once_flag> created;
    std::vector<at::Generator> generators;
    explicit Defaults(size_t n) : created(n), generators(n) {}
  };
  // Leaked on purpose: generators outlive every static user at exit.
  static auto* defaults = new Defaults(device_count());
  device = resolve_device_index(device);
  std::call_once(defaults->created[device], [&] {
    defaults->generators[device] = at::make_generator<AccInteGeneratorImpl>(device);
  });
  return defaults->generators[device];
}
// LITERALINCLUDE END: GENERATOR DEFAULTS

at::Generator createAccInteGenerator(DeviceIndex device) {
  device = resolve_device_index(device);
  return at::make_generator<AccInteGeneratorImpl>(device);
}

} // namespace c10::accinte
