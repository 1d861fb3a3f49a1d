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
// fails, take the synchronous path: the
// same kernel on the same aliases, but the calling thread waits for it, then
// moves what the CPU kernel allocated to the device. It is also the path
// that reports the CPU kernel's own error, with its own type, when a call is
// invalid.
#include <csrc/aten/native/Fallback.h>

#include <ATen/EmptyTensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <csrc/aten/native/CpuAlias.h>
#include <csrc/aten/native/LayoutAlias.h>
#include <csrc/aten/native/MetaCache.h>
#include <csrc/aten/native/OpPlan.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGenerator.h>
#include <csrc/runtime/AccInteGraph.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace at::native::accinte {
namespace {

using c10::IValue;

// Kernels run on a stream's worker thread, where a warning would be printed
// at every call. The Meta kernel already raised the call's warnings on the
// calling thread; what CPU kernels warn about besides is how they use their
// outputs internally (e.g. as scratch of another shape), not the user's code.
struct DiscardWarnings final : c10::WarningHandler {
  void process(const c10::Warning& /*warning*/) override {}
};

bool is_generator_type(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::GeneratorType) {
    return true;
  }
  const auto* optional = type->castRaw<c10::OptionalType>();
  return optional != nullptr &&
         optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
}

// Applies `f` to every tensor in an argument (a tensor, or a list of tensors
// or optional tensors).
template <typename F>
void for_each_tensor(const IValue& value, F&& f) {
  if (value.isTensor()) {
    f(value.toTensor());
  } else if (value.isList()) {
    for (const IValue& element : value.toListRef()) {
      if (element.isTensor()) {
        f(element.toTensor());
      }
    }
  }
}

// Rebuilds an argument with every tensor mapped through `f`.
template <typename F>
IValue map_tensors(const IValue& value, F&& f) {
  if (value.isTensor()) {
    return f(value.toTensor());
  }
  if (value.isList()) {
    const c10::List<IValue> list = value.toList();
    c10::impl::GenericList mapped(list.elementType());
    mapped.reserve(list.size());
    for (const IValue& element : list) {
      mapped.push_back(element.isTensor() ? IValue(f(element.toTensor())) : element);
    }
    return mapped;
  }
  return value;
}

// The accinte device the call runs on. Raises the same-device error for
// tensors on two accinte devices, or a host tensor with elements (0-dim host
// tensors are scalars and allowed, as on CUDA).
c10::Device target_device(const OpPlan& plan, c10::ArrayRef<IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> host;
  for (const IValue& value : args) {
    for_each_tensor(value, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return;
      }
      if (t.is_privateuseone()) {
        TORCH_CHECK(!device || *device == t.device(),
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, ", *device, " and ", t.device(), "!");
        device = t.device();
      } else if (t.dim() > 0 && !plan.accepts_host_tensors) {
        host = t.device();
      }
    });
  }
  if (device && host) {
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
                "devices, ", *device, " and ", *host, "!");
  }
  if (device) {
    return *device;
  }
  for (const IValue& value : args) {
    if (value.isDevice() && value.toDevice().is_privateuseone() && value.toDevice().has_index()) {
      return value.toDevice();
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
    IValue& value = stack[first + i];
    at::Generator generator = value.isNone() ? c10::accinte::getDefaultAccInteGenerator(device)
                                             : value.toGenerator();
    TORCH_CHECK(generator.device().is_privateuseone(),
                "Expected a generator on accinte, but got one on ", generator.device());
    value = generator.get<c10::accinte::AccInteGeneratorImpl>()->next_kernel_engine();
  }
}
// LITERALINCLUDE END: GENERATOR FALLBACK ENGINES

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
// having changed nothing, when the call must take the synchronous path.
// A Python Meta kernel's result for a signature seen for the first time: the
// call runs synchronously, then validate_and_remember checks it.
struct PendingMeta {
  std::string signature;
  MetaResult result;
};

bool run_async(const c10::OperatorHandle& op, const OpPlan& plan, torch::jit::Stack* stack,
               std::optional<PendingMeta>* pending) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  const c10::ArrayRef<IValue> args(stack->data() + first, num_args);
  const c10::Device device = target_device(plan, args);

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
    if (signature && !c10::accinte::is_stream_capturing(
                         c10::accinte::getCurrentAccInteStream(device.index()))) {
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
  const std::string kernel_name = c10::toString(kernel_op.operator_name());
// LITERALINCLUDE START: EXECUTION FALLBACK KERNEL
  c10::accinte::launch_kernel(
      c10::accinte::getCurrentAccInteStream(device.index()),
      [kernel_op, cpu_stack = std::move(cpu_stack), targets = std::move(targets),
       outputs = std::move(outputs), copy_results]() mutable {
        c10::impl::ExcludeDispatchKeyGuard no_autograd(
            c10::autograd_dispatch_keyset_with_ADInplaceOrView);
        static DiscardWarnings discard;
        c10::WarningUtils::WarningHandlerGuard quiet(&discard);
        // A copy: the call consumes its stack, and a kernel captured in a
        // graph runs once per replay (Note [accinte graphs]).
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
      kernel_name.c_str());

  torch::jit::drop(*stack, num_args);
  stack->insert(stack->end(), std::make_move_iterator(results.begin()),
                std::make_move_iterator(results.end()));
  return true;
}
// LITERALINCLUDE END: EXECUTION FALLBACK KERNEL

// Runs `op` as a kernel and waits for it, for calls whose output shapes
// cannot be known in advance (see the Note). Inputs are used in place, as on
// the asynchronous path; results the CPU kernel allocated are copied to the
// device by a kernel queued behind it, and views of inputs become views of
// the device tensors.
void run_sync(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  const OpPlan& plan = plan_for(op);
  const c10::ArrayRef<IValue> args(stack->data() + first, num_args);
  const c10::Device device = target_device(plan, args);
  c10::accinte::AccInteGuard guard(device.index());
  const auto stream = c10::accinte::getCurrentAccInteStream(device.index());
  // This path waits for the stream, which a capture forbids: say which
  // operator did it, before anything is queued.
  c10::accinte::check_not_capturing(
      stream, c10::str(op.operator_name(), " (accinte runs it synchronously: its output "
                       "shapes depend on the data, or no reliable Meta kernel plans them)"));

  struct Mutated {
    at::Tensor device;  // the argument
    at::Tensor working; // what the kernel writes (may be resized into host memory)
    at::Tensor home;    // the argument's bytes as they were
  };
  std::vector<Mutated> mutated;
  std::vector<at::Tensor> device_inputs;
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const IValue& value = args[i];
    const bool is_mutated = std::find(plan.mutated_args.begin(), plan.mutated_args.end(),
                                      static_cast<int>(i)) != plan.mutated_args.end();
    if (value.isDevice() && value.toDevice().is_privateuseone()) {
      cpu_stack.emplace_back(c10::Device(c10::kCPU));
      continue;
    }
    cpu_stack.push_back(map_tensors(value, [&](const at::Tensor& t) {
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
  substitute_generators(schema, cpu_stack, 0, device.index());

  struct State {
    torch::jit::Stack stack;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  state->stack = std::move(cpu_stack);
  std::vector<std::pair<at::Tensor, at::Tensor>> settle_in_place;
  for (const auto& m : mutated) {
    settle_in_place.emplace_back(m.working, m.home);
  }
  c10::accinte::launch_kernel(stream, [op, state, settle_in_place]() {
    try {
      c10::impl::ExcludeDispatchKeyGuard no_autograd(
          c10::autograd_dispatch_keyset_with_ADInplaceOrView);
      static DiscardWarnings discard;
      c10::WarningUtils::WarningHandlerGuard quiet(&discard);
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &state->stack);
      for (const auto& [working, home] : settle_in_place) {
        if (working.sizes() == home.sizes()) {
          settle(working, home);
        }
      }
    } catch (...) {
      state->error = std::current_exception();
    }
  });
  stream.synchronize();
  if (state->error) {
    std::rethrow_exception(state->error);
  }

  // Mutated arguments the kernel resized: resize on the device, copy over.
  for (const auto& m : mutated) {
    if (m.working.sizes() == m.home.sizes()) {
      continue;
    }
    m.device.resize_(m.working.sizes());
    c10::accinte::launch_kernel(stream, [src = m.working, dst = cpu_alias(m.device)]() mutable {
      dst.copy_(src);
    });
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
    at::Tensor out = at::detail::empty_strided_generic(
        t.sizes(), t.strides(), c10::accinte::getDeviceAllocator(),
        c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), t.scalar_type());
    if (t.numel() > 0) {
      c10::accinte::launch_kernel(stream, [src = t, dst = cpu_alias(out)]() mutable {
        dst.copy_(src);
      });
    }
    return out;
  };
  // A sparse or nested result (`to_sparse`, `_nested_tensor_from_mask`) goes
  // to the device component by component (Note [accinte layout fallbacks]).
  const auto result_to_device = [&](const at::Tensor& t) -> at::Tensor {
    return has_components(t) && t.is_cpu() ? device_counterpart(t, device, to_device)
                                           : to_device(t);
  };
  torch::jit::drop(*stack, num_args);
  for (IValue& result : state->stack) {
    stack->push_back(map_tensors(result, result_to_device));
  }
}

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

// After the first call of a signature ran synchronously: caches the Meta
// result, trusted only if it agrees with the returns and mutated arguments
// the CPU kernel really produced.
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
