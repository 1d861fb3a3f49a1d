#include <csrc/emulation/FallbackSync.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/FallbackCommon.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/runtime/AccInteGraph.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <algorithm>
#include <memory>

namespace at::native::accinte {
namespace {

using c10::IValue;

// Same sizes and dtypes (strides may differ: outputs are allocated with the
// Meta kernel's, and kernels write into whatever layout they are given).
bool same_shape(const IValue& meta, const IValue& real) {
  if (meta.isTensor() && real.isTensor()) {
    const at::Tensor& m = meta.toTensor();
    const at::Tensor& r = real.toTensor();
    return m.defined() == r.defined() &&
           (!m.defined() || (m.sizes() == r.sizes() && m.scalar_type() == r.scalar_type()));
  }
  if (meta.isList() && real.isList()) {
    const auto ms = meta.toListRef();
    const auto rs = real.toListRef();
    if (ms.size() != rs.size()) {
      return false;
    }
    for (size_t i = 0; i < ms.size(); ++i) {
      if (!same_shape(ms[i], rs[i])) {
        return false;
      }
    }
    return true;
  }
  return meta.isNone() == real.isNone();
}

} // namespace

void run_sync(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  const OpPlan& plan = plan_for(op);
  const c10::ArrayRef<IValue> args(stack->data() + first, num_args);
  const c10::Device device = call_device(args, plan.accepts_host_tensors);
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

  struct Mutated {
    at::Tensor device;  // the argument
    at::Tensor working; // what the kernel writes (may be resized into host memory)
    at::Tensor home;    // the argument's bytes as they were
  };
  std::vector<Mutated> mutated;
  std::vector<at::Tensor> device_inputs;
  auto cpu_stack = std::make_shared<torch::jit::Stack>();
  cpu_stack->reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const IValue& value = args[i];
    const bool is_mutated = std::find(plan.mutated_args.begin(), plan.mutated_args.end(),
                                      static_cast<int>(i)) != plan.mutated_args.end();
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      cpu_stack->emplace_back(c10::Device(c10::kCPU));
      continue;
    }
    cpu_stack->push_back(map_tensors(value, [&](const at::Tensor& t) {
      if (!t.defined() || !t.is_privateuseone()) {
        return t;
      }
      device_inputs.push_back(t);
      if (!is_mutated) {
        return cpu_alias(t);
      }
      mutated.push_back({t, resizable_cpu_alias(t), cpu_alias(t)});
      return mutated.back().working;
    }));
  }
  substitute_generators(schema, *cpu_stack, 0, device.index());

  std::vector<std::pair<at::Tensor, at::Tensor>> settle_in_place;
  for (const auto& m : mutated) {
    settle_in_place.emplace_back(m.working, m.home);
  }
  run_and_wait(stream, [op, cpu_stack, settle_in_place]() {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), cpu_stack.get());
    for (const auto& [working, home] : settle_in_place) {
      if (working.sizes() == home.sizes()) {
        settle(working, home);
      }
    }
  }, op.schema().name().c_str());

  // Mutated arguments the kernel resized: resize on the device, copy over.
  for (const auto& m : mutated) {
    if (m.working.sizes() != m.home.sizes()) {
      resize_and_copy(m.device, m.working, stream);
    }
  }
  const auto to_device = [&](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || !t.is_cpu()) {
      return t;
    }
    for (const auto& m : mutated) {
      if (t.is_same(m.working)) {
        return m.device;
      }
    }
    for (const auto& input : device_inputs) {
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
}

void validate_and_remember(const OpPlan& plan, const std::vector<IValue>& args,
                           const torch::jit::Stack& stack, PendingMeta pending) {
  const size_t num_returns = plan.returns.size();
  bool agrees = stack.size() >= num_returns && pending.result.returns.size() >= num_returns;
  for (size_t i = 0; agrees && i < num_returns; ++i) {
    agrees = same_shape(pending.result.returns[i], stack[stack.size() - num_returns + i]);
  }
  for (const int j : plan.mutated_args) {
    agrees = agrees && same_shape(pending.result.mirrors[j], args[j]);
  }
  pending.result.trusted = agrees;
  remember_meta(std::move(pending.signature), std::move(pending.result));
}

} // namespace at::native::accinte
