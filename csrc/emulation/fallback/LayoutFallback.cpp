// Note [accinte layout fallbacks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Sparse (COO, CSR, CSC, BSR, BSC) and nested tensors are made of dense
// component tensors: indices and values, compressed and plain indices and
// values, a buffer with host metadata. On accinte the components are dense
// device tensors, so such a tensor is the CPU's tensor with its components
// moved, and an operator on it can run the CPU's kernel on a host alias: the
// same sparse or nested tensor rebuilt over CPU aliases of the components
// (LayoutAlias.h). PyTorch dispatches these layouts to their own keys
// (SparsePrivateUse1, SparseCsrPrivateUse1, NestedTensorPrivateUse1), so one
// boxed fallback per key covers every operator:
//
//   1. every accinte argument becomes its host alias; dense arguments the
//      operator writes get resizable aliases, as in the global fallback;
//   2. the CPU's kernel runs as a kernel on the current stream, and the
//      calling thread waits for it;
//   3. results come back to the device: components that lie in an argument's
//      memory become views of it (`_values()`, `values()`, a nested
//      `values()` stay aliases, as on CUDA), the others are copied into fresh
//      device memory by kernels queued behind; a sparse argument the kernel
//      mutated takes the components it ended with.
//
// Unlike the dense path (Note [accinte fallback]) this one is synchronous:
// output shapes of sparse kernels depend on the data (nnz), and PyTorch has
// few Meta kernels for these layouts. The dense path is untouched by it.
//
// Two more registrations complete the layouts (AccInteLayoutFallback.cpp):
// operators whose CompositeExplicitAutograd default would win over a backend
// fallback and is wrong for these layouts (`sparse_dim` answers 0) get this
// fallback by name, for every operator the CPU implements for the layout;
// and PyTorch's device-generic kernels for metadata and construction
// (`_indices`, `_nnz`, `_sparse_coo_tensor_with_dims_and_tensors`, ...) are
// registered as they are for CUDA, so they need no synchronisation.
#include <csrc/emulation/fallback/LayoutFallback.h>

#include <csrc/emulation/CpuAlias.h>
#include <csrc/emulation/fallback/CpuArguments.h>
#include <csrc/emulation/fallback/FallbackCommon.h>
#include <csrc/emulation/LayoutAlias.h>
#include <csrc/runtime/AccInteGraphsUtils.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteStream.h>

#include <memory>

namespace at::native::accinte {
namespace {

using c10::IValue;

// The layout as Python names it, for messages.
std::string layout_name(const at::Tensor& t) {
  if (t.is_nested()) {
    return "nested";
  }
  if (t.is_quantized()) {
    return "quantized";
  }
  switch (t.layout()) {
    case c10::kSparse: return "torch.sparse_coo";
    case c10::kSparseCsr: return "torch.sparse_csr";
    case c10::kSparseCsc: return "torch.sparse_csc";
    case c10::kSparseBsr: return "torch.sparse_bsr";
    case c10::kSparseBsc: return "torch.sparse_bsc";
    default: return "torch.strided";
  }
}

// The first sentence of a dispatcher error ("Could not run 'aten::x' with
// arguments from the 'SparseCsrCPU' backend"), without its table of keys.
std::string first_sentence(const std::string& message) {
  return message.substr(0, message.find(". "));
}

// The layout of the first argument that has components, for messages.
std::string layout_of(c10::ArrayRef<IValue> args) {
  for (const IValue& value : args) {
    std::string layout;
    for_each_tensor(value, [&](const at::Tensor& t) {
      if (layout.empty() && t.defined() && has_components(t)) {
        layout = layout_name(t);
      }
    });
    if (!layout.empty()) {
      return layout;
    }
  }
  return "these";
}

} // namespace

// LITERALINCLUDE START: OPERATOR LAYOUT FALLBACK
void layout_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const c10::ArrayRef<IValue> args(stack->data() + stack->size() - num_args, num_args);
  const c10::Device device = call_device(args, /*accepts_host_tensors=*/false);
  c10::accinte::AccInteGuard guard(device.index());
  const auto stream = c10::accinte::getCurrentAccInteStream(device.index());
  // This path waits for the stream, which a capture forbids: say so before
  // anything is queued, as the dense fallback's synchronous path does. The
  // message is built only when it will be used.
  if (c10::accinte::is_stream_capturing(stream)) {
    c10::accinte::check_not_capturing(
        stream, c10::str(schema.operator_name(), " on ", layout_of(args), " tensors (accinte "
                         "runs the CPU's kernel for this layout and waits for it)")
                    .c_str());
  }

  // 1. Host aliases of the arguments (metadata only: no device memory read).
  CpuArguments cpu = cpu_aliases(schema, args, /*components=*/true);

  // 2. The CPU's kernel, on the stream, waited for.
  auto cpu_stack = std::make_shared<torch::jit::Stack>(std::move(cpu.stack));
  try {
    run_and_wait(stream, [op, cpu_stack, to_settle = cpu.to_settle()]() {
      op.callBoxed(cpu_stack.get());
      for (const auto& [working, home] : to_settle) {
        if (working.sizes() == home.sizes()) {
          settle(working, home);
        }
      }
    }, op.schema().name().c_str());
  } catch (const c10::NotImplementedError& e) {
    // The CPU's kernel for the layout refusing a dtype ("spmm_reduce_kernel"
    // not implemented for 'Bool') is the CPU's own answer: raised as it is.
    // Only the dispatcher's "no kernel for this layout" is explained.
    if (!e.msg().starts_with("Could not run '")) {
      throw;
    }
    TORCH_CHECK_NOT_IMPLEMENTED(false, schema.operator_name(), " is not supported for ",
                                layout_of(args), " tensors on accinte: accinte runs the CPU's "
                                "kernel for this layout and the CPU has none (",
                                first_sentence(e.msg()), ")");
  }

  // 3. Results to the device.
  const auto to_device = [&](const at::Tensor& c) -> at::Tensor {
    for (const at::Tensor& input : cpu.device_tensors) {
      if (lies_in(c, input)) {
        return device_view_of(input, c);
      }
    }
    return device_copy_of(c, stream);
  };
  for (const WrittenArgument& w : cpu.written) {
    if (!w.home.defined()) {
      update_from_host(w.device, w.working, to_device);
    } else if (w.working.sizes() != w.home.sizes()) {
      resize_and_copy(w.device, w.working, stream);
    }
  }
  torch::jit::drop(*stack, num_args);
  for (const IValue& result : *cpu_stack) {
    stack->push_back(map_tensors(result, [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_cpu()) {
        return t;
      }
      for (const WrittenArgument& w : cpu.written) {
        if (t.is_same(w.working)) {
          return w.device;
        }
      }
      return device_counterpart(t, device, to_device);
    }));
  }
}
// LITERALINCLUDE END: OPERATOR LAYOUT FALLBACK

} // namespace at::native::accinte
