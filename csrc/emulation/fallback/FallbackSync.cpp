#include <csrc/emulation/fallback/FallbackSync.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/fallback/CpuArguments.h>
#include <csrc/emulation/fallback/FallbackCommon.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/emulation/fallback/OpPlan.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <memory>

namespace at::native::accinte {

using c10::IValue;

size_t run_sync(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  const OpPlan& plan = plan_for(op);
  const c10::ArrayRef<IValue> args(stack->data() + first, num_args);
  const c10::Device device = call_device(args, plan.accepts_host_tensors);
  check_outputs_on_device(args, plan.mutated_args, device);
  c10::accinte::AccInteGuard guard(device.index());
  const auto stream = c10::accinte::getCurrentAccInteStream(device.index());
  // This path waits for the stream, which a capture forbids: say which
  // operator did it, before anything is queued. The message is built only
  // when it will be used: this path runs for every synchronous operator.
  if (c10::accinte::is_stream_capturing(stream)) {
    c10::accinte::check_not_capturing(
        stream, c10::str(op.operator_name(), " (accinte runs it synchronously: its output "
                         "shapes depend on the data, or no reliable Meta kernel plans them)")
                    .c_str());
  }

  CpuArguments cpu = cpu_aliases(schema, args);
  substitute_generators(schema, cpu.stack, 0, device.index());
  auto cpu_stack = std::make_shared<torch::jit::Stack>(std::move(cpu.stack));
  const size_t warnings = run_and_wait(stream, [op, cpu_stack, to_settle = cpu.to_settle()]() {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), cpu_stack.get());
    for (const auto& [working, home] : to_settle) {
      if (working.sizes() == home.sizes()) {
        settle(working, home);
      }
    }
  }, op.schema().name().c_str());

  // Written arguments the kernel resized: resize on the device, copy over.
  for (const WrittenArgument& w : cpu.written) {
    if (w.working.sizes() != w.home.sizes()) {
      resize_and_copy(w.device, w.working, stream);
    }
  }
  const auto to_device = [&](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || !t.is_cpu()) {
      return t;
    }
    for (const WrittenArgument& w : cpu.written) {
      if (t.is_same(w.working)) {
        return w.device;
      }
    }
    for (const at::Tensor& input : cpu.device_tensors) {
      if (lies_in(t, input)) {
        return device_view_of(input, t);
      }
    }
    return device_copy_of(t, stream);
  };
  // A sparse or nested result (`to_sparse`, `_nested_tensor_from_mask`) goes
  // to the device component by component (Note [accinte layout fallbacks]).
  const auto result_to_device = [&](const at::Tensor& t) -> at::Tensor {
    return has_components(t) && t.is_cpu() ? device_counterpart(t, device, to_device)
                                           : to_device(t);
  };
  torch::jit::drop(*stack, num_args);
  for (const IValue& result : *cpu_stack) {
    stack->push_back(map_tensors(result, result_to_device));
  }
  return warnings;
}

} // namespace at::native::accinte
