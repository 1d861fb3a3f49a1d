#include <csrc/aten/native/Fallback.h>

#include <ATen/native/CPUFallback.h>

#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>

namespace at::native::accinte {
namespace {

bool is_generator_type(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::GeneratorType) {
    return true;
  }
  const auto* optional = type->castRaw<c10::OptionalType>();
  return optional != nullptr &&
         optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

// The accinte device an operator runs on: that of its first accinte tensor,
// else its `device` argument, else the current device.
c10::DeviceIndex target_device(c10::ArrayRef<c10::IValue> arguments) {
  for (const auto& value : arguments) {
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().is_privateuseone()) {
      return value.toTensor().device().index();
    }
    if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorVector()) {
        if (t.defined() && t.is_privateuseone()) {
          return t.device().index();
        }
      }
    }
  }
  for (const auto& value : arguments) {
    if (value.isDevice() && value.toDevice().is_privateuseone() && value.toDevice().has_index()) {
      return value.toDevice().index();
    }
  }
  return c10::accinte::current_device();
}

void substitute_generators(const c10::FunctionSchema& schema, torch::jit::Stack* stack) {
  const auto& formals = schema.arguments();
  const size_t first = stack->size() - formals.size();
  std::optional<c10::DeviceIndex> device;
  for (size_t i = 0; i < formals.size(); ++i) {
    if (!is_generator_type(formals[i].type())) {
      continue;
    }
    c10::IValue& value = (*stack)[first + i];
    if (value.isNone()) {
      if (!device) {
        device = target_device(c10::ArrayRef<c10::IValue>(*stack).slice(first));
      }
      value = c10::accinte::getDefaultAccInteGenerator(*device)
                  .get<c10::accinte::AccInteGeneratorImpl>()
                  ->engine();
    } else if (value.isGenerator() && value.toGenerator().device().is_privateuseone()) {
      value = value.toGenerator().get<c10::accinte::AccInteGeneratorImpl>()->engine();
    }
  }
}

} // namespace

// LITERALINCLUDE START: FALLBACK GLOBAL
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  substitute_generators(op.schema(), stack);
  at::native::cpu_fallback(op, stack);
}
// LITERALINCLUDE END: FALLBACK GLOBAL

} // namespace at::native::accinte
