#include <csrc/emulation/CpuArguments.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/FallbackCommon.h>
#include <csrc/emulation/LayoutAlias.h>

namespace at::native::accinte {
namespace {

// Host storages of one call, one per device storage.
class HostStorages {
 public:
  at::Tensor alias(const at::Tensor& t) {
    const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
    for (const auto& [device, host] : storages_) {
      if (device == key) {
        return cpu_alias_in(t, host);
      }
    }
    storages_.emplace_back(key, host_storage(t));
    return cpu_alias_in(t, storages_.back().second);
  }

 private:
  std::vector<std::pair<const c10::StorageImpl*, c10::Storage>> storages_;
};

at::Tensor with_grad_flag(at::Tensor host, const at::Tensor& t) {
  if (t.requires_grad()) {
    host.set_requires_grad(true);
  }
  return host;
}

} // namespace

std::vector<std::pair<at::Tensor, at::Tensor>> CpuArguments::to_settle() const {
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs;
  for (const WrittenArgument& w : written) {
    if (w.home.defined()) {
      pairs.emplace_back(w.working, w.home);
    }
  }
  return pairs;
}

// LITERALINCLUDE START: EXECUTION CPU ARGUMENTS
CpuArguments cpu_arguments(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                           bool components) {
  CpuArguments cpu;
  cpu.stack.reserve(args.size());
  HostStorages storages;
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
        return t;
      }
      if (components && has_components(t)) {
        for (const at::Tensor& c : accinte::components(t)) {
          cpu.device_tensors.push_back(c);
        }
        at::Tensor host = with_grad_flag(host_alias(t), t);
        if (written) {
          cpu.written.push_back({t, host, {}});
        }
        return host;
      }
      cpu.device_tensors.push_back(t);
      at::Tensor host = storages.alias(t);
      if (written) {
        cpu.written.push_back({t, host, cpu_alias(t)});
      }
      return components && !written ? with_grad_flag(std::move(host), t) : host;
    }));
  }
  return cpu;
}
// LITERALINCLUDE END: EXECUTION CPU ARGUMENTS

} // namespace at::native::accinte
