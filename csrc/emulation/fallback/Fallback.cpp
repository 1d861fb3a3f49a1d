// Note [accinte fallback]
// ~~~~~~~~~~~~~~~~~~~~~~~
// accinte has no kernels of its own beyond a handful: every other operator
// runs the CPU kernel. Device memory is host memory, so the CPU kernel can
// work on it in place, through CPU aliases of the device tensors
// (CpuAlias.h, CpuArguments.h), and it does so as a kernel on the current
// stream, like a real device kernel: the calling thread returns as soon as
// the work is queued. A queued call must behave exactly as the CPU does:
// raise the CPU's errors and warnings at the call, with their types, and
// produce the functional operator's bits in the layouts the CPU gives. The
// engine guarantees it by construction, per call signature (LaunchCache.h:
// what a CPU kernel can see of a call without reading tensor values):
//
//   1. the first call of a signature is checked at the call (FirstRun.h):
//      the CPU kernel runs on host stand-ins of its arguments on the calling
//      thread and the call is then queued, or, where stand-ins cannot
//      decide, it runs synchronously on the real arguments. Either way its
//      errors, including those only the CPU kernel checks, and its warnings
//      reach the caller at the call. If it succeeds, what it showed is
//      recorded: the layout of every output, whether the Meta kernel (which
//      cannot see values) agrees on the shapes, so that they do not depend on
//      the data, and whether the operator's out= overload writes the
//      functional operator's bytes into outputs of those layouts;
//   2. a later call of a recorded signature is validated by that record and
//      queued: fresh outputs are allocated with the recorded layouts, views
//      of arguments are built as views, an empty out= tensor takes its
//      recorded layout; the kernel runs the out= overload only where it was
//      shown to agree, otherwise the functional operator, whose results it
//      copies into the outputs. Only errors that depend on values can still
//      be raised by the kernel; they name the operator at the next
//      synchronisation, as on CUDA;
//   3. a signature whose first run warned, returned an alias of an input or
//      disagreed with the Meta kernel runs synchronously every time, and so
//      do operators whose output shapes depend on data (nonzero, unique,
//      masked_select, ...) or that have no Meta kernel (FallbackSync.h), and
//      the calls CUDA waits for (linalg.eig, a linalg `_ex` operator asked
//      to check_errors), whose errors in the data CUDA raises at the call;
//   4. random operators get this device's generator (its CPU engine), never
//      the CPU's default one.
//
// While a stream captures a graph nothing may wait for it, so the first call
// of a signature is planned by the Meta kernel alone and queued unchecked.
#include <csrc/emulation/fallback/Fallback.h>

#include <ATen/ops/empty_strided_ops.h>
#include <c10/util/SmallVector.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/fallback/CpuArguments.h>
#include <csrc/emulation/fallback/FallbackCommon.h>
#include <csrc/emulation/fallback/FallbackSync.h>
#include <csrc/emulation/fallback/FirstRun.h>
#include <csrc/emulation/fallback/LaunchCache.h>
#include <csrc/emulation/fallback/OpPlan.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

#include <optional>
#include <string>

namespace at::native::accinte {
namespace {

using c10::IValue;

// One call reaching the fallback.
struct Call {
  const c10::OperatorHandle& op;
  const OpPlan& plan;
  torch::jit::Stack* stack;
  c10::ArrayRef<IValue> args; // the call's arguments, at the end of `stack`
  c10::Device device;
  c10::accinte::AccInteStream stream;
};

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

// A device tensor laid out as `meta`, from accinte's own empty_strided (its
// storage an AccInteStorageImpl, see Note [Custom storage]), redispatched to
// it: the fallback already runs below every other key, so a full dispatch
// (BackendSelect, the profiler's hooks) would only add a launch's cost, and
// the CPU's and CUDA's kernels allocate their outputs without one too (no
// aten::empty_strided under the operator in a profile).
at::Tensor empty_like_meta(const at::Tensor& meta, c10::Device device) {
  if (!meta.defined()) {
    return meta; // an output the call does not produce (e.g. masked gradients)
  }
  return at::_ops::empty_strided::redispatch(
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), meta.sym_sizes(), meta.sym_strides(),
      meta.scalar_type(), c10::Layout::Strided, device, /*pin_memory=*/std::nullopt);
}

bool same_layout(const at::Tensor& t, const at::Tensor& meta) {
  return t.sizes() == meta.sizes() && t.strides() == meta.strides();
}

// LITERALINCLUDE START: EXECUTION WRITTEN ARGUMENTS
// 1. Whether a written argument can take its recorded layout without a
// synchronous run: it has it already, or it is an empty tensor that the
// CPU kernel resizes (then the kernel resizes a CPU alias of the empty
// tensor, as on the CPU, and the result is copied home). A non-empty out=
// tensor of another shape made the first run warn, so never comes here.
// Sets `relayout` when an empty tensor must take its recorded layout.
bool written_arguments_fit(const Call& call, const LaunchRecord& record, bool& relayout) {
  for (const int j : call.plan.mutated_args) {
    const IValue& arg = call.args[j];
    const IValue& mirror = record.mirrors[j];
    if (arg.isTensor()) {
      const at::Tensor& t = arg.toTensor();
      if (t.defined() && !same_layout(t, mirror.toTensor())) {
        if (t.numel() > 0) {
          return false;
        }
        relayout = true;
      }
    } else if (arg.isList()) {
      const auto ts = arg.toListRef();
      const auto ms = mirror.toListRef();
      for (size_t k = 0; k < ts.size(); ++k) {
        if (ts[k].isTensor() && !same_layout(ts[k].toTensor(), ms[k].toTensor())) {
          return false;
        }
      }
    }
  }
  return true;
}
// LITERALINCLUDE END: EXECUTION WRITTEN ARGUMENTS

// LITERALINCLUDE START: EXECUTION DEVICE OUTPUTS
// 3. Device outputs, laid out as recorded. Written arguments take their
// recorded layout where they lack it (`relayout`; their CPU aliases keep the
// layout the call came with); returns are the written arguments, views built
// as views, or fresh device tensors (`fresh`, in return order) that the
// kernel fills.
c10::SmallVector<IValue, 2> device_outputs(const Call& call, const LaunchRecord& record,
                                           CpuArguments& cpu, bool relayout,
                                           std::vector<IValue>& fresh) {
  if (relayout) {
    for (WrittenArgument& w : cpu.written) {
      if (!w.home.defined()) {
        continue;
      }
      for (const int j : call.plan.mutated_args) {
        const IValue& mirror = record.mirrors[j];
        if (call.args[j].isTensor() && call.args[j].toTensor().is_same(w.device) &&
            !same_layout(w.device, mirror.toTensor())) {
          const at::Tensor& meta = mirror.toTensor();
          w.device.resize_(meta.sizes());
          w.device.as_strided_(meta.sizes(), meta.strides(), w.device.storage_offset());
          w.home = DeferredCpuAlias(w.device);
        }
      }
    }
  }
  c10::SmallVector<IValue, 2> results;
  for (size_t i = 0; i < call.plan.returns.size(); ++i) {
    const OpPlan::ReturnInfo& ret = call.plan.returns[i];
    const IValue& meta = record.returns[i];
    switch (ret.kind) {
      case OpPlan::Return::kMutated:
        results.push_back(call.args[ret.arg]);
        break;
      case OpPlan::Return::kView:
        results.push_back(view_of(call.args[ret.arg].toTensor(), meta.toTensor()));
        break;
      case OpPlan::Return::kFresh:
        fresh.push_back(map_tensors(meta, [&](const at::Tensor& m) {
          return empty_like_meta(m, call.device);
        }));
        results.push_back(fresh.back());
        break;
    }
  }
  return results;
}
// LITERALINCLUDE END: EXECUTION DEVICE OUTPUTS

// LITERALINCLUDE START: EXECUTION FALLBACK KERNEL
// 4. The kernel. Fresh outputs are written by the out= overload where the
// first run showed it writes the functional operator's bytes; otherwise
// the functional operator runs and its results are copied into them. Built
// in its closure (make_kernel): its arguments are never moved.
class FallbackKernel {
 public:
  FallbackKernel(const Call& call, const LaunchRecord& record, CpuArguments& cpu,
                 const std::vector<IValue>& fresh)
      : op_(call.op),
        stack_(std::move(cpu.stack)),
        to_settle_(std::move(cpu).to_settle()),
        caller_(CallerState::capture()),
        captured_(c10::accinte::is_stream_capturing(call.stream)) {
    if (!fresh.empty() && record.out_route) {
      // Some out= kernels use their output as scratch of another shape
      // (mse_loss.out): resizable aliases, settled like written arguments.
      op_ = *call.plan.out_variant;
      for (const IValue& out : fresh) {
        stack_.push_back(map_tensors(out, [&](const at::Tensor& t) {
          at::Tensor alias = resizable_cpu_alias(t); // checks t
          DeferredCpuAlias home = DeferredCpuAlias::of_alias(alias);
          to_settle_.emplace_back(std::move(alias), std::move(home));
          return to_settle_.back().first;
        }));
      }
    } else {
      for (const IValue& out : fresh) {
        targets_.push_back(map_tensors(out, [](const at::Tensor& t) {
          return t.defined() ? cpu_alias(t) : t;
        }));
      }
    }
  }

  /// The operator's name, which the dispatcher keeps as long as the operator.
  const char* name() const { return op_.schema().name().c_str(); }

  void operator()() {
    TORCH_CHECK(captured_ || !ran_, "accinte: ", op_.schema().name(), " was captured by a "
                "capture that began on another thread while it was being launched");
    ran_ = true;
    CpuKernelScope scope(caller_);
    // The call consumes its stack, so it gets a copy: the closure keeps its
    // arguments to release them on the host (Note [accinte kernels release on
    // the host]), and a kernel captured in a graph runs once per replay (Note
    // [accinte graphs]). The copy lives in the worker's one buffer, emptied
    // (never freed) after every kernel.
    WorkerStack run(stack_);
    try {
      op_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &run.stack);
    } catch (const c10::Error& e) {
      // Only an error that depends on values gets here (the first run of
      // the signature passed every other check): say whose it is.
      TORCH_CHECK(false, op_.schema().name(), " failed in its kernel on accinte: ",
                  e.what_without_backtrace());
    }
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].isTensor()) {
        if (targets_[i].toTensor().defined()) {
          targets_[i].toTensor().copy_(run.stack[i].toTensor());
        }
      } else {
        const auto outs = targets_[i].toListRef();
        const auto got = run.stack[i].toListRef();
        for (size_t k = 0; k < outs.size(); ++k) {
          outs[k].toTensor().copy_(got[k].toTensor());
        }
      }
    }
    for (const auto& [working, home] : to_settle_) {
      settle(working, home);
    }
  }

 private:
  // The running thread's buffer for the stack a kernel consumes (a worker's,
  // or a waiting host's: Note [accinte a waiting host runs the queue]),
  // filled with a copy of the kernel's arguments and emptied at exit. A
  // thread runs one kernel at a time: none runs another one inline.
  struct WorkerStack {
    explicit WorkerStack(const torch::jit::Stack& arguments) : stack(buffer()) {
      stack.assign(arguments.begin(), arguments.end());
    }
    ~WorkerStack() { stack.clear(); }
    WorkerStack(const WorkerStack&) = delete;
    WorkerStack& operator=(const WorkerStack&) = delete;

    static torch::jit::Stack& buffer() {
      thread_local torch::jit::Stack stack;
      return stack;
    }
    torch::jit::Stack& stack;
  };

  c10::OperatorHandle op_;
  torch::jit::Stack stack_;
  std::vector<IValue> targets_; // fresh outputs, for the functional route
  CpuArguments::SettleList to_settle_;
  CallerState caller_;
  bool captured_;
  bool ran_ = false;
};

void queue_kernel(const Call& call, const LaunchRecord& record, CpuArguments& cpu,
                  const std::vector<IValue>& fresh) {
  auto kernel = c10::accinte::make_kernel<FallbackKernel>(call, record, cpu, fresh);
  const char* name = kernel->function().name();
  c10::accinte::launch_kernel(call.stream, std::move(kernel), name);
}
// LITERALINCLUDE END: EXECUTION FALLBACK KERNEL

// LITERALINCLUDE START: EXECUTION LAUNCH
// Queues a call whose signature `record` describes. Returns false, having
// changed nothing, when the call must run synchronously after all.
bool launch_async(const Call& call, const LaunchRecord& record) {
  bool relayout = false;
  if (!written_arguments_fit(call, record, relayout)) {
    return false;
  }
  // The call's device is current from here: a copy-on-write argument is
  // materialized (cpu_aliases) on it.
  c10::accinte::AccInteGuard guard(call.device.index());
  // 2. CPU aliases of the arguments as the call passed them.
  CpuArguments cpu = cpu_aliases(call.op.schema(), call.args);
  if (call.plan.draws_random) {
    substitute_generators(call.op.schema(), cpu.stack, 0, call.device.index());
  }
  std::vector<IValue> fresh;
  c10::SmallVector<IValue, 2> results = device_outputs(call, record, cpu, relayout, fresh);
  queue_kernel(call, record, cpu, fresh);
  torch::jit::drop(*call.stack, call.args.size());
  call.stack->insert(call.stack->end(), std::make_move_iterator(results.begin()),
                     std::make_move_iterator(results.end()));
  return true;
}
// LITERALINCLUDE END: EXECUTION LAUNCH

} // namespace

// LITERALINCLUDE START: FALLBACK GLOBAL
void accinte_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OpPlan& plan = plan_for(op);
  const size_t num_args = op.schema().arguments().size();
  const c10::ArrayRef<IValue> args(stack->data() + stack->size() - num_args, num_args);
  if (!plan.can_run_async ||
      (plan.check_errors_arg >= 0 && args[plan.check_errors_arg].toBool())) {
    run_sync(op, stack);
    return;
  }
  const c10::Device device = call_device(args, plan.accepts_host_tensors);
  check_outputs_on_device(args, plan.mutated_args, device);
  const Call call{op, plan, stack, args, device,
                  c10::accinte::getCurrentAccInteStream(device.index())};
  // One buffer per thread: a launch builds its signature without allocating.
  // Only the lookup reads it; a first call copies it before anything else runs.
  thread_local std::string key;
  if (!launch_signature(op, args, key)) {
    run_sync(op, stack);
  } else if (const auto record = lookup_launch(key)) {
    if (!record->asynchronous || !launch_async(call, *record)) {
      run_sync(op, stack);
    }
  } else {
    std::string signature = key;
    // The first call of a signature: checked on host stand-ins, recorded,
    // queued. Where stand-ins cannot decide, the real call runs
    // synchronously, except while capturing: nothing may wait for a
    // capturing stream, so the Meta kernel plans the call alone.
    const auto meta = meta_record(op, plan, args, /*planning=*/false);
    const auto checked = meta && !plan.trusts_its_indices
                             ? check_on_stand_ins(op, plan, args, *meta)
                             : std::nullopt;
    if (checked) {
      remember_launch(signature, *checked);
      if (launch_async(call, *checked)) {
        return;
      }
    }
    if (c10::accinte::is_stream_capturing(call.stream)) {
      const auto plan_only = meta_record(op, plan, args, /*planning=*/true);
      if (!plan_only || !launch_async(call, *plan_only)) {
        run_sync(op, stack); // refuses, naming the operator
      }
      return;
    }
    run_first_call(op, plan, stack, std::move(signature), meta);
  }
}
// LITERALINCLUDE END: FALLBACK GLOBAL

} // namespace at::native::accinte
