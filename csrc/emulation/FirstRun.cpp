#include <csrc/emulation/FirstRun.h>

#include <ATen/EmptyTensor.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/CpuArguments.h>
#include <csrc/emulation/FallbackCommon.h>
#include <csrc/emulation/FallbackSync.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <cstring>
#include <memory>

namespace at::native::accinte {
namespace {

using c10::IValue;

// Same sizes and dtypes (the Meta kernel's strides may differ from the CPU
// kernel's: outputs take the CPU's, recorded from the first run).
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

bool meta_agrees(const OpPlan& plan, const LaunchRecord& meta, const LaunchRecord& real) {
  bool agrees = meta.returns.size() == real.returns.size();
  for (size_t i = 0; agrees && i < real.returns.size(); ++i) {
    agrees = same_shape(meta.returns[i], real.returns[i]);
  }
  for (const int j : plan.mutated_args) {
    agrees = agrees && same_shape(meta.mirrors[j], real.mirrors[j]);
  }
  return agrees;
}

// A fresh return that shares memory with an argument (the CPU kernel
// returned its input as is): a queued call could not know it in advance.
bool fresh_result_aliases(const OpPlan& plan, c10::ArrayRef<IValue> results,
                          c10::ArrayRef<IValue> args) {
  bool aliases = false;
  for (size_t i = 0; i < results.size() && i < plan.returns.size(); ++i) {
    if (plan.returns[i].kind != OpPlan::Return::kFresh) {
      continue;
    }
    for_each_tensor(results[i], [&](const at::Tensor& r) {
      for (const IValue& arg : args) {
        for_each_tensor(arg, [&](const at::Tensor& a) {
          aliases |= r.defined() && a.defined() && r.storage().is_alias_of(a.storage());
        });
      }
    });
  }
  return aliases;
}

// Equal bytes over the span of two CPU tensors of the same layout. Bytes in
// the gaps of a non-dense layout count too, which can only make the
// comparison fail, never pass wrongly.
bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0) {
    return true;
  }
  const size_t span = at::detail::computeStorageNbytes(a.sizes(), a.strides(), a.itemsize());
  return std::memcmp(a.const_data_ptr(), b.const_data_ptr(), span) == 0;
}

// LITERALINCLUDE START: EXECUTION OUT ROUTE
// Runs the out= overload into fresh outputs laid out as the functional
// operator's `results` and compares the bytes. A kernel that treats a
// preallocated output otherwise (binary_cross_entropy.out into a 0-dim
// output reduces differently on the CPU itself) or that cannot write this
// layout fails the comparison, and its calls keep the functional operator.
bool out_route_agrees(const c10::OperatorHandle& op, const OpPlan& plan,
                      c10::ArrayRef<IValue> args, c10::ArrayRef<IValue> results,
                      const c10::accinte::AccInteStream& stream) {
  if (!plan.out_variant || plan.draws_random || !plan.mutated_args.empty()) {
    return false; // no overload, or one that would draw or write twice
  }
  bool all_fresh = true;
  for (size_t i = 0; i < plan.returns.size(); ++i) {
    all_fresh &= plan.returns[i].kind == OpPlan::Return::kFresh;
    for_each_tensor(results[i], [&](const at::Tensor& t) { all_fresh &= t.defined(); });
  }
  if (!all_fresh) {
    return false;
  }
  CpuArguments cpu = cpu_arguments(op.schema(), args);
  std::vector<at::Tensor> outputs; // device memory the trial writes
  std::vector<at::Tensor> got;
  std::vector<at::Tensor> expected;
  for (const IValue& result : results) {
    cpu.stack.push_back(map_tensors(result, [&](const at::Tensor& t) {
      outputs.push_back(at::detail::empty_strided_generic(
          t.sizes(), t.strides(), c10::accinte::getDeviceAllocator(),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), t.scalar_type()));
      got.push_back(cpu_alias(outputs.back()));
      expected.push_back(cpu_alias(t));
      return got.back();
    }));
  }
  auto stack = std::make_shared<torch::jit::Stack>(std::move(cpu.stack));
  auto agrees = std::make_shared<bool>(false);
  try {
    run_and_wait(stream, [out_op = *plan.out_variant, stack, got, expected, agrees]() {
      out_op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack.get());
      bool same = true;
      for (size_t i = 0; i < got.size() && same; ++i) {
        same = same_bytes(got[i], expected[i]);
      }
      *agrees = same;
    }, /*quiet=*/true);
  } catch (const std::exception&) {
    return false;
  }
  return *agrees;
}
// LITERALINCLUDE END: EXECUTION OUT ROUTE

} // namespace

at::Tensor meta_mirror(const at::Tensor& t) {
  if (!t.defined()) {
    return t;
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), t.storage().nbytes(),
                       c10::DataPtr(nullptr, c10::Device(c10::kMeta)),
                       c10::GetAllocator(c10::kMeta), /*resizable=*/true);
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::Meta), t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    impl->set_wrapped_number(true); // keeps Python-scalar type promotion
  }
  at::Tensor mirror(std::move(impl));
  mirror._set_conj(t.is_conj());
  mirror._set_neg(t.is_neg());
  return mirror;
}

std::optional<LaunchRecord> meta_record(const c10::OperatorHandle& op, const OpPlan& plan,
                                        c10::ArrayRef<IValue> args, bool quiet) {
  torch::jit::Stack meta_stack;
  meta_stack.reserve(args.size());
  LaunchRecord record;
  record.mirrors.resize(args.size());
  for (const IValue& value : args) {
    if (value.isGenerator()) {
      meta_stack.emplace_back(); // Meta kernels draw nothing
    } else if (value.isDevice() && value.toDevice().is_privateuseone()) {
      meta_stack.emplace_back(c10::Device(c10::kMeta));
    } else {
      meta_stack.push_back(map_tensors(value, meta_mirror));
    }
  }
  for (const int j : plan.mutated_args) {
    record.mirrors[j] = meta_stack[j]; // shares the mirrors the Meta kernel resizes
  }
  try {
    DiscardWarnings discard;
    std::optional<c10::WarningUtils::WarningHandlerGuard> silence;
    if (quiet) {
      silence.emplace(&discard);
    }
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  record.returns = std::move(meta_stack);
  record.asynchronous = true;
  return record;
}

// LITERALINCLUDE START: EXECUTION FIRST RUN
void run_first_call(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
                    std::string signature) {
  const size_t num_args = op.schema().arguments().size();
  const std::vector<IValue> args(stack->end() - num_args, stack->end()); // the stack is consumed
  const std::optional<LaunchRecord> meta = meta_record(op, plan, args, /*quiet=*/true);
  const size_t warnings = run_sync(op, stack); // throws the CPU's error, at the call

  const c10::ArrayRef<IValue> results(stack->data() + stack->size() - plan.returns.size(),
                                      plan.returns.size());
  LaunchRecord record;
  record.mirrors.resize(num_args);
  for (const int j : plan.mutated_args) {
    record.mirrors[j] = map_tensors(args[j], meta_mirror);
  }
  for (const IValue& result : results) {
    record.returns.push_back(map_tensors(result, meta_mirror));
  }
  record.asynchronous = meta && warnings == 0 && meta_agrees(plan, *meta, record) &&
                        !fresh_result_aliases(plan, results, args);
  if (record.asynchronous) {
    const c10::Device device = call_device(args, plan.accepts_host_tensors);
    c10::accinte::AccInteGuard guard(device.index());
    record.out_route = out_route_agrees(op, plan, args, results,
                                        c10::accinte::getCurrentAccInteStream(device.index()));
  }
  remember_launch(std::move(signature), std::move(record));
}
// LITERALINCLUDE END: EXECUTION FIRST RUN

} // namespace at::native::accinte
