#pragma once
// AccInteGeneratorImpl: the random number generator of an accinte device.
//
// Kernels of this backend are CPU kernels running on the device's memory, and
// CPU kernels only accept CPU generators (at::check_generator compares device
// types). So an accinte generator owns a CPU generator, its engine: seeding
// and state go to the engine, and the operator fallback hands the engine to
// the CPU kernel. State round-trips in the CPU generator's format.
//
// Note [accinte generator offset]
// A CUDA generator is Philox: a seed plus an offset (how far the counter has
// advanced), and PyTorch's pickling of a non-CPU torch.Generator saves and
// restores that offset (seed, then offset, then state). The engine here is
// the CPU's mt19937, whose position is entirely in its state, so an accinte
// generator reports offset 0 and accepts only 0 back: pickling and deepcopy
// work, and the state restored after the offset carries the position. A
// vendor with a counter-based generator implements a real offset instead.

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace c10::accinte {

struct C10_EXPORT AccInteGeneratorImpl final : public c10::GeneratorImpl {
  /// A generator of device `device` (which must be a valid index).
  explicit AccInteGeneratorImpl(DeviceIndex device,
                                uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  /// See Note [accinte generator offset]: accepts only 0, throws otherwise.
  void set_offset(uint64_t offset) override;
  /// Always 0: the engine's position lives in its state (get_state).
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  static DeviceType device_type() { return DeviceType::PrivateUse1; }

  /// The CPU generator that CPU kernels draw from on this device's behalf.
  const at::Generator& engine() const { return engine_; }

 private:
  AccInteGeneratorImpl* clone_impl() const override;
  // mutable: const readers still lock the engine's mutex.
  mutable at::Generator engine_;
};

/// The default generator of `device` (-1: current device), created on first use.
C10_EXPORT const at::Generator& getDefaultAccInteGenerator(DeviceIndex device = -1);

/// A new generator of `device` (-1: current device).
C10_EXPORT at::Generator createAccInteGenerator(DeviceIndex device = -1);

} // namespace c10::accinte
