#include <csrc/emulation/fallback/FirstRun.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/emulation/fallback/CpuArguments.h>
#include <csrc/emulation/fallback/FallbackCommon.h>
#include <csrc/emulation/fallback/FallbackSync.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
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
  if (!meta.from_meta) {
    return true; // outputs given by the caller: their shapes are not the data's
  }
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

// A dense operator may return a sparse tensor (_embedding_bag_backward with
// sparse=True): a layout a meta mirror cannot record (it has no storage) nor
// a queued call allocate, so every call of its signature runs synchronously.
bool has_sparse_result(c10::ArrayRef<IValue> results) {
  bool sparse = false;
  for (const IValue& result : results) {
    for_each_tensor(result, [&](const at::Tensor& t) {
      sparse |= t.defined() && has_components(t);
    });
  }
  return sparse;
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

// Stand-ins are at most this large in all; a call on more memory runs
// synchronously the first time instead.
constexpr size_t kStandInBudget = size_t{64} << 20;

// LITERALINCLUDE START: EXECUTION STAND INS
// The call's arguments with every accinte tensor replaced by a stand-in
// (CpuArguments.h, HostMemory::kStandIns) and every generator by a fresh CPU
// generator: the device's and the CPU's default ones must not advance.
// nullopt for sparse or nested arguments, or past kStandInBudget.
std::optional<torch::jit::Stack> stand_ins(const c10::FunctionSchema& schema,
                                           c10::ArrayRef<IValue> args) {
  std::optional<CpuArguments> cpu =
      cpu_arguments(schema, args, HostMemory::kStandIns, /*components=*/false, kStandInBudget);
  if (!cpu) {
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_generator_type(schema.arguments()[i].type())) {
      cpu->stack[i] = at::make_generator<at::CPUGeneratorImpl>(/*seed_in=*/0);
    }
  }
  return std::move(cpu->stack);
}
// LITERALINCLUDE END: EXECUTION STAND INS

// Runs the out= overload on the stand-ins `inputs` into outputs laid out as
// the functional operator's `results` and compares the bytes; an overload
// that warns keeps the functional operator (Note [accinte a warning ends a
// run on stand-ins]). A kernel that
// treats a preallocated output otherwise (binary_cross_entropy.out into a
// 0-dim output reduces another way, on the CPU itself) or that cannot
// write this layout fails, and the calls keep the functional operator.
bool out_route_agrees(const OpPlan& plan, const torch::jit::Stack& inputs,
                      c10::ArrayRef<IValue> results) {
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
  torch::jit::Stack stack = inputs;
  std::vector<at::Tensor> got;
  std::vector<at::Tensor> expected;
  for (const IValue& result : results) {
    stack.push_back(map_tensors(result, [&](const at::Tensor& t) {
      got.push_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      expected.push_back(t);
      return got.back();
    }));
  }
  try {
    EndRunOnWarning warned; // a warning spent here would be lost to the caller
    c10::WarningUtils::WarningHandlerGuard end_on_warning(&warned);
    plan.out_variant->redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].is_conj() != expected[i].is_conj() || got[i].is_neg() != expected[i].is_neg() ||
        !same_bytes(got[i], expected[i])) {
      return false;
    }
  }
  return true;
}

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
                                        c10::ArrayRef<IValue> args, bool planning) {
  const bool quiet = !planning;
  LaunchRecord record;
  record.mirrors.resize(args.size());
  record.asynchronous = true;
  if (!planning && plan.meta_is_python && !plan.takes_indices && !plan.outputs_given) {
    return record; // from_meta unset: nothing to compare (see OpPlan::meta_is_python)
  }
  if (plan.outputs_given) {
    // In-place and out= calls: the written arguments as they are. A Python
    // Meta kernel would only repeat (and warn about) what the CPU kernel
    // checks, and the shapes cannot depend on the data of outputs given.
    for (const int j : plan.mutated_args) {
      record.mirrors[j] = map_tensors(args[j], meta_mirror);
    }
    for (const OpPlan::ReturnInfo& ret : plan.returns) {
      record.returns.push_back(record.mirrors[ret.arg]);
    }
    return record;
  }
  record.from_meta = true;
  torch::jit::Stack meta_stack;
  meta_stack.reserve(args.size());
  for (const IValue& value : args) {
    if (value.isGenerator()) {
      meta_stack.emplace_back(); // Meta kernels draw nothing
    } else if (value.isDevice() && value.toDevice().is_privateuseone()) {
      meta_stack.emplace_back(c10::Device(c10::kMeta));
    } else {
      meta_stack.push_back(map_tensors(value, [](const at::Tensor& t) {
        // A Python scalar stays a CPU scalar: Python Meta kernels expect it so.
        return t.defined() && t.is_cpu() && t.unsafeGetTensorImpl()->is_wrapped_number()
                   ? t
                   : meta_mirror(t);
      }));
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
  return record;
}

// Note [accinte a warning ends a run on stand-ins]
// A run on stand-ins that warns is dropped: the call then runs for real,
// synchronously, and its warnings reach the caller. The stand-in run must
// not spend them first. TORCH_WARN_ONCE warns once per process through a
// function-local static whose initializer warns; the first call's warning
// would go to the stand-in run's handler and the real run would give none
// (torch.searchsorted's "input value tensor is non-contiguous"). So the
// handler of a stand-in run throws at the first warning (EndRunOnWarning):
// the static's initialization then exits by an exception, is not complete,
// and runs again, warning, in the real call. The run is abandoned at that
// point, which costs nothing: its outcome would have been dropped.

// LITERALINCLUDE START: EXECUTION FIRST RUN
std::optional<LaunchRecord> check_on_stand_ins(const c10::OperatorHandle& op, const OpPlan& plan,
                                               c10::ArrayRef<IValue> args,
                                               const LaunchRecord& meta) {
  std::optional<torch::jit::Stack> stack = stand_ins(op.schema(), args);
  if (!stack) {
    return std::nullopt;
  }
  const torch::jit::Stack inputs = *stack; // the same tensors, kept past the call
  EndRunOnWarning warned;
  try {
    c10::WarningUtils::WarningHandlerGuard end_on_warning(&warned);
    c10::impl::ExcludeDispatchKeyGuard no_autograd(
        c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &*stack);
  } catch (const std::exception&) {
    // The real call shows whether the error was the stand-ins' values; a
    // warning must reach the caller at every call, so a call that warns
    // runs synchronously.
    return std::nullopt;
  }
  if (stack->size() != plan.returns.size() || has_sparse_result(*stack)) {
    return std::nullopt;
  }
  LaunchRecord record;
  record.mirrors.resize(args.size());
  for (const int j : plan.mutated_args) {
    record.mirrors[j] = map_tensors(inputs[j], meta_mirror);
  }
  for (const IValue& result : *stack) {
    record.returns.push_back(map_tensors(result, meta_mirror));
  }
  if (!meta_agrees(plan, meta, record) || fresh_result_aliases(plan, *stack, inputs)) {
    return std::nullopt;
  }
  record.asynchronous = true;
  record.out_route = out_route_agrees(plan, inputs, *stack);
  return record;
}

void run_first_call(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
                    std::string signature, const std::optional<LaunchRecord>& meta) {
  const size_t num_args = op.schema().arguments().size();
  const std::vector<IValue> args(stack->end() - num_args, stack->end()); // the stack is consumed
  const size_t warnings = run_sync(op, stack); // throws the CPU's error, at the call

  const c10::ArrayRef<IValue> results(stack->data() + stack->size() - plan.returns.size(),
                                      plan.returns.size());
  LaunchRecord record;
  record.mirrors.resize(num_args);
  if (has_sparse_result(results)) {
    remember_launch(std::move(signature), std::move(record)); // not asynchronous
    return;
  }
  for (const int j : plan.mutated_args) {
    record.mirrors[j] = map_tensors(args[j], meta_mirror);
  }
  for (const IValue& result : results) {
    record.returns.push_back(map_tensors(result, meta_mirror));
  }
  record.asynchronous = meta && warnings == 0 && meta_agrees(plan, *meta, record) &&
                        !fresh_result_aliases(plan, results, args);
  remember_launch(std::move(signature), std::move(record));
}
// LITERALINCLUDE END: EXECUTION FIRST RUN

} // namespace at::native::accinte
