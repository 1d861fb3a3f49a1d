#pragma once
// AccInteGeneratorImpl: the random number generator of an accinte device.
//
// Note [accinte random numbers]
// Random kernels run later, on a stream, but which numbers they draw must be
// fixed when they are launched: re-seeding or reading the state on the host
// while earlier kernels are still queued must not change what those kernels
// draw. So, like CUDA's Philox generator, an accinte generator is a counter:
// its state is (seed, offset), and each random kernel takes the next offset
// at launch and draws from its own CPU engine seeded from (seed, offset)
// (CPU kernels accept only CPU generators). A sequence of random operators is
// therefore reproducible from the seed alone, whatever the timing.
//
// Note [accinte graph-safe random numbers]
// A random kernel captured in a graph runs again at every replay, and must
// draw fresh numbers each time, as it does on CUDA (see "Graph-safe RNG
// states" in CUDAGeneratorImpl.h). A fixed engine seeded at capture would
// repeat one mask forever. So while the current stream captures for an
// AccInteGraph, next_kernel_engine takes no offset: it hands out an engine
// that is not seeded yet and registers it with the graph as the capture's
// k-th draw from this generator. Each replay reserves as many offsets as the
// capture drew (reserve_offsets, the counterpart of CUDA's replay_prologue)
// and queues, ahead of the graph on the replay stream, a kernel that seeds
// engine k from (seed, base + k) exactly as an eager launch at that offset
// would be seeded (engine_seed). Hence:
//   - every replay draws fresh numbers and advances the offset by the number
//     of random kernels captured;
//   - a replay draws what the same operators run eagerly from the same
//     generator state draw, so a manual_seed makes the sequence reproducible
//     and comparable with eager execution;
//   - capturing draws nothing: the offset is unchanged by a capture;
//   - the reseeding is stream-ordered, like CUDA's seed and offset tensors:
//     replays of one graph on one stream never see each other's seeds.

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace c10::accinte {

// LITERALINCLUDE START: GENERATOR IMPL
struct C10_EXPORT AccInteGeneratorImpl final : public c10::GeneratorImpl {
  /// A generator of device `device` (which must be a valid index).
  explicit AccInteGeneratorImpl(DeviceIndex device,
                                uint64_t seed = c10::default_rng_seed_val);

  // The GeneratorImpl interface. Callers hold mutex_ (see Note [Acquire lock
  // when using random generators]); these methods do not lock.
  void set_current_seed(uint64_t seed) override;  ///< also resets the offset to 0
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;  ///< a non-deterministic seed, set and returned
  /// State: 16 bytes, the seed then the offset (uint64 each, native order).
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  static DeviceType device_type() { return DeviceType::PrivateUse1; }

  /// For one random kernel queued on the current stream of this generator's
  /// device: a CPU generator seeded from (seed, offset), after which the
  /// offset advances by one; during a graph capture, an engine the graph
  /// seeds at each replay instead (Note [accinte graph-safe random numbers]).
  /// Locks mutex_.
  at::Generator next_kernel_engine();

  /// For a graph replay: the current (seed, offset), after which the offset
  /// advances by `count`. Locks mutex_.
  std::pair<uint64_t, uint64_t> reserve_offsets(uint64_t count);

  /// The CPU engine seed of the draw at `offset` under `seed`.
  static uint64_t engine_seed(uint64_t seed, uint64_t offset);

 private:
  AccInteGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};
// LITERALINCLUDE END: GENERATOR IMPL

/// The default generator of `device` (-1: current device), created on first use.
C10_EXPORT const at::Generator& getDefaultAccInteGenerator(DeviceIndex device = -1);

/// A new generator of `device` (-1: current device).
C10_EXPORT at::Generator createAccInteGenerator(DeviceIndex device = -1);

} // namespace c10::accinte
