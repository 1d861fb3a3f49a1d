#include <csrc/emulation/fallback/CpuArguments.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/empty.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/fallback/FallbackCommon.h>
#include <csrc/emulation/LayoutAlias.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

namespace at::native::accinte {
namespace {

// Made-up values for a stand-in storage, viewed as `dtype`: uniform in
// [0, 1) for floating and complex types, 0 or 1 for integers and bools
// (valid indices into any non-empty dimension); zeros where the CPU cannot
// draw the dtype.
void fill_stand_in(const at::Tensor& bytes, at::ScalarType dtype, at::Generator& generator) {
  const int64_t itemsize = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t n = bytes.numel() / itemsize;
  try {
    if (n > 0) {
      at::Tensor values = bytes.narrow(0, 0, n * itemsize).view(dtype);
      if (at::isFloatingType(dtype) || at::isComplexType(dtype)) {
        values.uniform_(0, 1, generator);
      } else {
        values.random_(0, 2, generator);
      }
    }
  } catch (const std::exception&) {
    bytes.zero_();
  }
}

// Host storages of one call, one per device storage.
class HostStorages {
 public:
  /// With `reuse`, the first alias of each device storage may be one an
  /// earlier call made (reusable_cpu_alias).
  HostStorages(HostMemory memory, size_t max_bytes, bool reuse)
      : memory_(memory), max_bytes_(max_bytes), reuse_(reuse) {}

  /// `t` over its host storage; undefined past max_bytes.
  at::Tensor alias(const at::Tensor& t) {
    const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
    for (const auto& [device, host] : storages_) {
      if (device == key) {
        return cpu_alias_in(t, host);
      }
    }
    if (memory_ == HostMemory::kDevice && reuse_) {
      at::Tensor alias = reusable_cpu_alias(t);
      storages_.emplace_back(key, alias.storage());
      return alias;
    }
    if (memory_ == HostMemory::kDevice) {
      storages_.emplace_back(key, host_storage(t));
    } else {
      const size_t nbytes = t.storage().nbytes();
      bytes_ += nbytes;
      if (bytes_ > max_bytes_) {
        return {};
      }
      at::Tensor block = at::empty({static_cast<int64_t>(nbytes)}, at::kByte);
      if (!generator_.defined()) {
        generator_ = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/0);
      }
      fill_stand_in(block, t.scalar_type(), generator_);
      storages_.emplace_back(key, block.storage());
    }
    return cpu_alias_in(t, storages_.back().second);
  }

 private:
  HostMemory memory_;
  size_t max_bytes_;
  bool reuse_;
  size_t bytes_ = 0;
  at::Generator generator_; // made for the first stand-in: costly to seed
  c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 4> storages_;
};

// Note [accinte copy-on-write arguments]
// A lazy clone (Tensor._lazy_clone, and what PyTorch makes with it) shares
// its storage copy-on-write: the storage is copied the first time someone
// asks for its data to write (StorageImpl::mutable_data), and reading
// (StorageImpl::data) does not copy. The host aliases of a call are made
// from the read-only pointer, so each storage an operator writes is
// materialized first, before any alias of the call is made: an argument
// read through the same storage must see the copy too. The copy itself is
// made before the call goes on (Note [accinte copy-on-write copies]), on
// the call's device, which the launch makes current first.
void materialize(const c10::IValue& value) {
  if (!value.isTensor()) {
    return;
  }
  const at::Tensor& t = value.toTensor();
  if (t.defined() && t.is_privateuseone() && !has_components(t) && t.has_storage()) {
    (void)t.storage().mutable_data();  // copies a copy-on-write storage
  }
}

void materialize_written(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    if (alias == nullptr || !alias->isWrite()) {
      continue;
    }
    if (args[i].isList()) {
      for (const c10::IValue& element : args[i].toListRef()) {
        materialize(element);
      }
    } else {
      materialize(args[i]);
    }
  }
}

// A wrapped number (a Python scalar the bindings made a 0-dim CPU tensor of:
// the `1` of x.add_(1)) equal to `number` that an earlier call of this
// thread passed and nothing holds any more, else `number`, kept for later
// calls (Note [accinte alias reuse]): the kernel then reads a scalar the
// worker has seen before rather than one the launching thread just made.
// Nothing but the bindings sees a wrapped number, and no kernel writes one.
at::Tensor reusable_wrapped_number(const at::Tensor& number) {
  constexpr size_t kCachedNumbers = 4;
  thread_local std::array<at::Tensor, kCachedNumbers> cache;
  thread_local size_t next = 0;
  const c10::TensorImpl* impl = number.unsafeGetTensorImpl();
  if (!number.is_cpu() || impl->dim() != 0 || number.requires_grad() ||
      !impl->has_storage() || number.is_conj() || number.is_neg()) {
    return number;
  }
  const size_t itemsize = number.itemsize();
  const void* value = number.const_data_ptr();
  for (const at::Tensor& cached : cache) {
    if (cached.defined() && cached.use_count() == 1 && cached.storage().use_count() == 1) {
      // Pairs with the release of the last other reference (see the Note).
      std::atomic_thread_fence(std::memory_order_acquire);
      if (cached.key_set() == number.key_set() && cached.dtype() == number.dtype() &&
          cached.storage().nbytes() == number.storage().nbytes() &&
          cached.unsafeGetTensorImpl()->is_wrapped_number() &&
          cached.unsafeGetTensorImpl()->autograd_meta() == nullptr &&
          std::memcmp(cached.const_data_ptr(), value, itemsize) == 0) {
        return cached;
      }
    }
  }
  cache[next] = number;
  next = (next + 1) % kCachedNumbers;
  return number;
}

at::Tensor with_grad_flag(at::Tensor host, const at::Tensor& t) {
  if (t.requires_grad()) {
    host.set_requires_grad(true);
  }
  return host;
}

} // namespace

CpuArguments::SettleList CpuArguments::to_settle() const & {
  SettleList pairs;
  for (const WrittenArgument& w : written) {
    if (w.home.defined()) {
      pairs.emplace_back(w.working, w.home);
    }
  }
  return pairs;
}

CpuArguments::SettleList CpuArguments::to_settle() && {
  SettleList pairs;
  for (WrittenArgument& w : written) {
    if (w.home.defined()) {
      pairs.emplace_back(std::move(w.working), std::move(w.home));
    }
  }
  return pairs;
}

namespace {

// Note [accinte a tensor passed twice]
// A CPU kernel tells an argument passed twice by identity: TensorIterator
// marks an output that `is_same` as an input read-write, and then refuses to
// resize it (ldexp_ is mul.out(self, self, other): the CPU refuses a
// broadcast that would grow self, with "output with shape [3] doesn't match
// the broadcast shape [2, 3]"). Two aliases of one device tensor would be two
// TensorImpls over one storage, so the kernel would resize the output
// instead, with a warning, where the CPU raises. Each device TensorImpl of a
// call therefore becomes one host tensor, whichever argument it comes in.
// Not with `components`: those aliases carry their argument's requires_grad
// flag and are never shared.

// LITERALINCLUDE START: EXECUTION CPU ARGUMENTS
// Fills `cpu` (empty) as cpu_arguments describes; false where it returns
// nullopt. Built in place: the queued path's arguments are never moved.
bool fill_cpu_arguments(CpuArguments& cpu, const c10::FunctionSchema& schema,
                        c10::ArrayRef<c10::IValue> args, HostMemory memory, bool components,
                        size_t max_bytes) {
  cpu.stack.reserve(args.size());
  if (memory == HostMemory::kDevice) {
    materialize_written(schema, args);
  }
  // Aliases given requires_grad (with `components`) are never shared.
  const bool reuse = memory == HostMemory::kDevice && !components;
  HostStorages storages(memory, max_bytes, reuse);
  // A tensor passed twice gets one host tensor (Note [accinte a tensor passed
  // twice]). A handful per call at most: a linear search.
  c10::SmallVector<std::pair<const c10::TensorImpl*, at::Tensor>, 4> seen;
  bool complete = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    const bool written = alias != nullptr && alias->isWrite();
    const c10::IValue& value = args[i];
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      cpu.stack.emplace_back(c10::Device(c10::kCPU));
      continue;
    }
    cpu.stack.push_back(map_tensors(value, [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_privateuseone()) {
        return reuse && t.defined() && t.unsafeGetTensorImpl()->is_wrapped_number()
                   ? reusable_wrapped_number(t)
                   : t;
      }
      if (has_components(t)) {
        complete = complete && memory == HostMemory::kDevice;
        for (const at::Tensor& c : accinte::components(t)) {
          cpu.device_tensors.push_back(c);
        }
        at::Tensor host = with_grad_flag(host_alias(t), t);
        if (written) {
          cpu.written.push_back({t, host, {}});
        }
        return host;
      }
      const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
      const auto same = std::find_if(seen.begin(), seen.end(),
                                     [&](const auto& entry) { return entry.first == impl; });
      at::Tensor host;
      if (same != seen.end() && !components) {
        host = same->second;
      } else {
        cpu.device_tensors.push_back(t);
        host = storages.alias(t);
        seen.emplace_back(impl, host);
      }
      complete = complete && host.defined();
      if (written && memory == HostMemory::kDevice) {
        cpu.written.push_back({t, host, DeferredCpuAlias::of_alias(host)});
      }
      return components && !written ? with_grad_flag(std::move(host), t) : host;
    }));
  }
  return complete;
}
// LITERALINCLUDE END: EXECUTION CPU ARGUMENTS

} // namespace

std::optional<CpuArguments> cpu_arguments(const c10::FunctionSchema& schema,
                                          c10::ArrayRef<c10::IValue> args, HostMemory memory,
                                          bool components, size_t max_bytes) {
  std::optional<CpuArguments> cpu(std::in_place);
  if (!fill_cpu_arguments(*cpu, schema, args, memory, components, max_bytes)) {
    cpu.reset();
  }
  return cpu;
}

CpuArguments cpu_aliases(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                         bool components) {
  CpuArguments cpu;
  // Room for the outputs a kernel of the out= route appends (Fallback.cpp),
  // so that appending them does not move the stack.
  cpu.stack.reserve(args.size() + schema.returns().size());
  // Device memory is always complete: aliases, no budget.
  (void)fill_cpu_arguments(cpu, schema, args, HostMemory::kDevice, components, SIZE_MAX);
  return cpu;
}

} // namespace at::native::accinte
