#include <csrc/emulation/fallback/FallbackCommon.h>

#include <ATen/ops/empty_strided.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteKernel.h>

#include <exception>
#include <memory>
#include <optional>

namespace at::native::accinte {

bool is_generator_type(const c10::TypePtr& type) {
  const auto* optional = type->castRaw<c10::OptionalType>();
  return (optional != nullptr ? optional->getElementType() : type)->kind() ==
         c10::TypeKind::GeneratorType;
}

c10::Device call_device(c10::ArrayRef<c10::IValue> args, bool accepts_host_tensors) {
  if (accepts_host_tensors && args.size() > 1 && args[0].isTensor()) {
    // Indexing: the indexed tensor decides, as the Meta function of index
    // does: each index on the CPU or on its device (a CPU tensor indexed with
    // accinte indices is refused, not computed on the device).
    const c10::Device indexed = args[0].toTensor().device();
    for_each_tensor(args[1], [&](const at::Tensor& t) {
      TORCH_CHECK(!t.defined() || t.is_cpu() || t.device() == indexed, "indices should be "
                  "either on ", c10::kCPU, " or on the same device as the indexed tensor (",
                  indexed, ")");
    });
  }
  std::optional<c10::Device> device;
  std::optional<c10::Device> host;
  for (const c10::IValue& value : args) {
    for_each_tensor(value, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return;
      }
      if (t.is_privateuseone()) {
        TORCH_CHECK(!device || *device == t.device(),
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, ", *device, " and ", t.device(), "!");
        device = t.device();
      } else if (!accepts_host_tensors && (t.dim() > 0 || has_components(t))) {
        host = t.device();
      }
    });
  }
  TORCH_CHECK(!(device && host), "Expected all tensors to be on the same device, but found at "
              "least two devices, ", *device, " and ", *host, "!");
  if (device) {
    return *device;
  }
  bool names_accinte = false;
  for (const c10::IValue& value : args) {
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      if (value.toDevice().has_index()) {
        return value.toDevice();
      }
      names_accinte = true;
    }
  }
  if (!names_accinte) {
    // No accinte tensor and no accinte device argument: the dispatcher came
    // here only for an accinte generator passed to a host call
    // (torch.randn(3, generator=g), torch.multinomial(cpu_tensor, 2,
    // generator=g)). The CPU kernel would refuse that generator; so do we.
    for (const c10::IValue& value : args) {
      TORCH_CHECK(!value.isGenerator() || !value.toGenerator().device().is_privateuseone(),
                  "Expected a 'cpu' device type for generator but found 'accinte'");
    }
  }
  return {c10::DeviceType::PrivateUse1, c10::accinte::current_device()};
}

// LITERALINCLUDE START: GENERATOR FALLBACK ENGINES
// Gives a random operator the engine of its device's generator for this one
// call (see Note [accinte random numbers]): a missing generator means the
// device's default one.
void substitute_generators(const c10::FunctionSchema& schema, torch::jit::Stack& stack,
                           size_t first, c10::DeviceIndex device) {
  const auto& formals = schema.arguments();
  for (size_t i = 0; i < formals.size(); ++i) {
    if (!is_generator_type(formals[i].type())) {
      continue;
    }
    c10::IValue& value = stack[first + i];
    at::Generator generator = value.isNone() ? c10::accinte::getDefaultAccInteGenerator(device)
                                             : value.toGenerator();
    TORCH_CHECK(generator.device().is_privateuseone(),
                "Expected a 'accinte' device type for generator but found '",
                generator.device().type(), "'");
    value = generator.get<c10::accinte::AccInteGeneratorImpl>()->next_kernel_engine();
  }
}
// LITERALINCLUDE END: GENERATOR FALLBACK ENGINES

void check_outputs_on_device(c10::ArrayRef<c10::IValue> args, const std::vector<int>& mutated,
                             c10::Device device) {
  for (const int j : mutated) {
    for_each_tensor(args[j], [&](const at::Tensor& t) {
      TORCH_CHECK(!t.defined() || t.device() == device,
                  "Expected all tensors to be on the same device, but found at least two "
                  "devices, ", device, " and ", t.device(), "!");
    });
  }
}

void resize_and_copy(const at::Tensor& device, const at::Tensor& host,
                     const c10::accinte::AccInteStream& stream) {
  const auto* base = static_cast<const char*>(device.storage().data());
  if (host.storage().data() == base && base != nullptr) {
    // The kernel laid the tensor out anew inside its own memory (a linalg
    // out= kernel making it column-major, say): the device tensor takes that
    // layout, as the CPU's does; its bytes are already there. (Its host
    // storage starts where the device storage does, so offsets agree.)
    device.as_strided_(host.sizes(), host.strides(), host.storage_offset());
    return;
  }
  device.resize_(host.sizes());
  if (host.is_non_overlapping_and_dense() && device.strides() != host.strides()) {
    device.as_strided_(host.sizes(), host.strides(), device.storage_offset());
  }
  launch_cpu_kernel(stream, [src = host, dst = cpu_alias(device)]() mutable {
    dst.copy_(src);
  }, "aten::copy_");
}

} // namespace at::native::accinte
