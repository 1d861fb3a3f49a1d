// Note [accinte fallback]
// ~~~~~~~~~~~~~~~~~~~~~~~
// accinte has no kernels of its own beyond a handful: every other operator
// runs the CPU kernel. Device memory is host memory, so the CPU kernel can
// work on it in place, through CPU aliases of the device tensors
// (CpuAlias.h), and it does so as a kernel on the current stream, like a
// real device kernel: the calling thread returns as soon as the work is
// queued. That needs three things to be known before the kernel runs:
//
//   1. output shapes: the operator's Meta kernel computes them from shapes
//      alone (on meta mirrors of the arguments), and validates the call, so
//      shape and dtype errors are raised synchronously, at the call;
//   2. output memory: fresh outputs are allocated on the device up front and
//      the kernel calls the operator's out= overload to write into them (or,
//      without one, copies the CPU result in); outputs that are views of an
//      argument are built as views, with no kernel at all; mutated arguments
//      are resized first if the Meta kernel resized their mirrors;
//   3. randomness: random operators get this device's generator (its CPU
//      engine), never the CPU's default one.
//
// Meta kernels written in Python are slow, so their results are cached per
// call signature (MetaCache.h). Operators whose output shapes depend on data
// (nonzero, unique, masked_select, ...), or whose Meta kernel is missing or
// fails, take the synchronous path (FallbackSync.h): the
// same kernel on the same aliases, but the calling thread waits for it, then
// moves what the CPU kernel allocated to the device. It is also the path
// that reports the CPU kernel's own error, with its own type, when a call is
// invalid.
#include <csrc/emulation/Fallback.h>

#include <ATen/EmptyTensor.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/FallbackCommon.h>
#include <csrc/emulation/FallbackSync.h>
#include <csrc/emulation/MetaCache.h>
#include <csrc/emulation/OpPlan.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteGraph.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include <algorithm>

namespace at::native::accinte {
namespace {

using c10::IValue;

// A meta tensor with the same storage size, sizes, strides, offset, dtype and
// math bits as `t`, so the Meta kernel sees exactly what the CPU kernel will.
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

// A device tensor laid out as `meta` says, sharing `base`'s storage.
at::Tensor view_of(const at::Tensor& base, const at::Tensor& meta) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW,
                                                   c10::Storage(base.storage()),
                                                   base.key_set(), meta.dtype());
  impl->set_sizes_and_strides(meta.sizes(), meta.strides(), meta.storage_offset());
  at::Tensor view(std::move(impl));
  view._set_conj(meta.is_conj());
  view._set_neg(meta.is_neg());
  return view;
}

at::Tensor empty_like_meta(const at::Tensor& meta) {
  if (!meta.defined()) {
    return meta; // an output the call does not produce (e.g. masked gradients)
  }
  return at::detail::empty_strided_generic(
      meta.sizes(), meta.strides(), c10::accinte::getDeviceAllocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), meta.scalar_type());
}

// Brings a mutated device argument to the shape its meta mirror ended with.
void match_layout(const at::Tensor& device_tensor, const at::Tensor& meta) {
  if (device_tensor.sizes() == meta.sizes() && device_tensor.strides() == meta.strides()) {
    return;
  }
  device_tensor.resize_(meta.sizes());
  if (device_tensor.strides() != meta.strides()) {
    device_tensor.as_strided_(meta.sizes(), meta.strides(), device_tensor.storage_offset());
  }
}

// Runs `op` as a kernel on the current stream (see the Note). Returns false,
// having changed nothing, when the call must take the synchronous path; sets
// `pending` when that is the first call of a Python Meta kernel's signature.
bool run_async(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
               std::optional<PendingMeta>* pending) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  const c10::ArrayRef<IValue> args(stack->data() + first, num_args);
  const c10::Device device = call_device(args, plan.accepts_host_tensors);
  const auto stream = c10::accinte::getCurrentAccInteStream(device.index());

// LITERALINCLUDE START: EXECUTION META PLAN
  // 1. Shapes and validation from the Meta kernel. When the outputs already
  // exist with elements (the path of structured operators, whose C++ meta
  // function ran before the call reached here) a Python Meta kernel would only
  // repeat that work, slowly; settle() still refuses a wrong final shape.
  bool skip_meta = plan.meta_is_python && plan.outputs_preallocated;
  for (const int j : plan.mutated_args) {
    for_each_tensor(args[j], [&](const at::Tensor& t) {
      skip_meta = skip_meta && t.defined() && t.numel() > 0;
    });
  }
  torch::jit::Stack meta_stack;
  meta_stack.reserve(num_args);
  std::vector<IValue> mirrors(num_args); // meta mirrors of mutated arguments
  for (size_t i = 0; i < num_args && !skip_meta; ++i) {
    const IValue& value = args[i];
    if (value.isGenerator()) {
      meta_stack.emplace_back(); // Meta kernels draw nothing
    } else if (value.isDevice() && value.toDevice().is_privateuseone()) {
      meta_stack.emplace_back(c10::Device(c10::kMeta));
    } else {
      meta_stack.push_back(map_tensors(value, meta_mirror));
    }
    mirrors[i] = meta_stack.back();
  }
  // A Python Meta kernel's result is reused for calls with the same
  // signature (MetaCache.h).
  std::optional<std::string> signature;
  bool from_cache = false;
  if (!skip_meta && plan.meta_is_python) {
    signature = meta_signature(op, args);
    if (signature) {
      if (auto cached = lookup_meta(*signature)) {
        if (!cached->trusted) {
          return false;
        }
        meta_stack = std::move(cached->returns);
        mirrors = std::move(cached->mirrors);
        from_cache = true;
      }
    }
  }
  if (!skip_meta && !from_cache) {
    try {
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
    } catch (const std::exception&) {
      return false;
    }
    // First call of this signature: run it synchronously and check the Meta
    // kernel against the real outputs (see MetaCache.h). Not while the stream
    // captures a graph, which nothing may wait for: the Meta result is used
    // unchecked, and the check is left to a later call outside capture.
    if (signature && !c10::accinte::is_stream_capturing(stream)) {
      *pending = PendingMeta{std::move(*signature), MetaResult{meta_stack, mirrors}};
      return false;
    }
  }
// LITERALINCLUDE END: EXECUTION META PLAN

// LITERALINCLUDE START: EXECUTION DEVICE OUTPUTS
  // 2. Device outputs.
  c10::accinte::AccInteGuard guard(device.index());
  for (const int j : plan.mutated_args) {
    if (!skip_meta && args[j].isTensor() && args[j].toTensor().defined()) {
      match_layout(args[j].toTensor(), mirrors[j].toTensor());
    }
  }
  std::vector<IValue> results;
  std::vector<IValue> fresh; // device outputs the kernel writes, in return order
  for (size_t i = 0; i < plan.returns.size(); ++i) {
    const OpPlan::ReturnInfo& ret = plan.returns[i];
    const IValue& meta = meta_stack[i];
    switch (ret.kind) {
      case OpPlan::Return::kMutated:
        results.push_back(args[ret.arg]);
        break;
      case OpPlan::Return::kView:
        results.push_back(view_of(args[ret.arg].toTensor(), meta.toTensor()));
        break;
      case OpPlan::Return::kFresh:
        fresh.push_back(map_tensors(meta, empty_like_meta));
        results.push_back(fresh.back());
        break;
    }
  }
// LITERALINCLUDE END: EXECUTION DEVICE OUTPUTS

  // 3. The kernel: CPU aliases of device tensors, host tensors owned.
  // Outputs (fresh ones and mutated arguments) get resizable aliases plus a
  // fixed "home" alias each, see resizable_cpu_alias.
  std::vector<std::pair<at::Tensor, at::Tensor>> outputs; // (working alias, home)
  const auto output_alias = [&outputs](const at::Tensor& t) {
    if (!t.defined() || !t.is_privateuseone()) {
      return t;
    }
    outputs.emplace_back(resizable_cpu_alias(t), cpu_alias(t));
    return outputs.back().first;
  };
  const auto input_alias = [](const at::Tensor& t) {
    return t.defined() && t.is_privateuseone() ? cpu_alias(t) : t;
  };
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args + fresh.size());
  for (size_t i = 0; i < num_args; ++i) {
    const IValue& value = args[i];
    const bool mutated = std::find(plan.mutated_args.begin(), plan.mutated_args.end(),
                                   static_cast<int>(i)) != plan.mutated_args.end();
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      cpu_stack.emplace_back(c10::Device(c10::kCPU));
    } else {
      cpu_stack.push_back(mutated ? map_tensors(value, output_alias)
                                  : map_tensors(value, input_alias));
    }
  }
  substitute_generators(schema, cpu_stack, 0, device.index());
  std::vector<IValue> targets;
  for (const IValue& out : fresh) {
    targets.push_back(map_tensors(out, output_alias));
  }
  // out= overloads want every output; a call that produces only some (masked
  // gradients) runs the functional operator and copies what it returns.
  bool some_output_missing = false;
  for (const IValue& out : fresh) {
    for_each_tensor(out, [&](const at::Tensor& t) { some_output_missing |= !t.defined(); });
  }
  const bool copy_results = !fresh.empty() && (!plan.out_variant || some_output_missing);
  c10::OperatorHandle kernel_op = op;
  if (!fresh.empty() && !copy_results) {
    kernel_op = *plan.out_variant;
    cpu_stack.insert(cpu_stack.end(), targets.begin(), targets.end());
    targets.clear();
  }
// LITERALINCLUDE START: EXECUTION FALLBACK KERNEL
  // The call consumes its stack, so it gets a copy: the closure keeps its
  // arguments to release them on the host (Note [accinte kernels release on
  // the host]), and a kernel captured in a graph runs once per replay (Note
  // [accinte graphs]).
  const bool captured = c10::accinte::is_stream_capturing(stream);
  c10::accinte::launch_kernel(
      stream,
      [kernel_op, cpu_stack = std::move(cpu_stack), targets = std::move(targets),
       outputs = std::move(outputs), copy_results, captured, ran = false,
       caller = CallerState::capture()]() mutable {
        TORCH_CHECK(captured || !ran, "accinte: ", kernel_op.schema().name(), " was captured "
                    "by a capture that began on another thread while it was being launched");
        ran = true;
        CpuKernelScope scope(caller);
        torch::jit::Stack run_stack = cpu_stack;
        kernel_op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &run_stack);
        if (copy_results) {
          for (size_t i = 0; i < targets.size(); ++i) {
            if (targets[i].isTensor()) {
              if (targets[i].toTensor().defined()) {
                targets[i].toTensor().copy_(run_stack[i].toTensor());
              }
            } else {
              const auto outs = targets[i].toListRef();
              const auto got = run_stack[i].toListRef();
              for (size_t k = 0; k < outs.size(); ++k) {
                outs[k].toTensor().copy_(got[k].toTensor());
              }
            }
          }
        }
        for (const auto& [working, home] : outputs) {
          settle(working, home);
        }
      },
      kernel_op.schema().name().c_str()); // lives as long as the operator

  torch::jit::drop(*stack, num_args);
  stack->insert(stack->end(), std::make_move_iterator(results.begin()),
                std::make_move_iterator(results.end()));
  return true;
}
// LITERALINCLUDE END: EXECUTION FALLBACK KERNEL

} // namespace

// LITERALINCLUDE START: FALLBACK GLOBAL
void accinte_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OpPlan& plan = plan_for(op);
  std::optional<PendingMeta> pending;
  if (plan.can_run_async && run_async(op, plan, stack, &pending)) {
    return;
  }
  if (!pending) {
    run_sync(op, stack);
    return;
  }
  // Arguments before the call (the stack is consumed), for the mutated ones.
  const size_t num_args = op.schema().arguments().size();
  const std::vector<IValue> args(stack->end() - num_args, stack->end());
  run_sync(op, stack);
  validate_and_remember(plan, args, *stack, std::move(*pending));
}
// LITERALINCLUDE END: FALLBACK GLOBAL

} // namespace at::native::accinte
