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
#include <csrc/aten/native/LayoutFallback.h>

#include <ATen/EmptyTensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <csrc/aten/native/CpuAlias.h>
#include <csrc/aten/native/LayoutAlias.h>
#include <csrc/runtime/AccInteDeviceAllocator.h>
#include <csrc/runtime/AccInteFunctions.h>
#include <csrc/runtime/AccInteGuard.h>
#include <csrc/runtime/AccInteKernel.h>
#include <csrc/runtime/AccInteStream.h>

namespace at::native::accinte {
namespace {

using c10::IValue;

struct DiscardWarnings final : c10::WarningHandler {
  void process(const c10::Warning& /*warning*/) override {}
};

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

// The layout as Python names it, for messages.
std::string layout_name(const at::Tensor& t) {
  if (t.is_nested()) {
    return "nested";
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

// The accinte device of the call; the same-device error for tensors on two
// accinte devices or a host tensor with elements among accinte ones.
c10::Device call_device(c10::ArrayRef<IValue> args, std::string* layout) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> host;
  for (const IValue& value : args) {
    map_tensors(value, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return t;
      }
      if (has_components(t) && layout->empty()) {
        *layout = layout_name(t);
      }
      if (t.is_privateuseone()) {
        TORCH_CHECK(!device || *device == t.device(),
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, ", *device, " and ", t.device(), "!");
        device = t.device();
      } else if (t.dim() > 0 || has_components(t)) {
        host = t.device();
      }
      return t;
    });
  }
  TORCH_CHECK(!(device && host), "Expected all tensors to be on the same device, but found at "
              "least two devices, ", *device, " and ", *host, "!");
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

// Some CPU kernels compute what their backward needs only for inputs that
// require grad (the arg-max indices of `_sparse_mm_reduce_impl`): a host
// alias carries the flag of the tensor it stands for. No graph is recorded,
// since the kernel runs with autograd excluded.
at::Tensor with_grad_flag(at::Tensor host, const at::Tensor& t) {
  if (t.requires_grad()) {
    host.set_requires_grad(true);
  }
  return host;
}

} // namespace

// LITERALINCLUDE START: OPERATOR LAYOUT FALLBACK
void layout_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const c10::ArrayRef<IValue> args(stack->data() + stack->size() - num_args, num_args);
  std::string layout;
  const c10::Device device = call_device(args, &layout);
  c10::accinte::AccInteGuard guard(device.index());
  const auto stream = c10::accinte::getCurrentAccInteStream(device.index());

  // 1. Host aliases of the arguments (metadata only: no device memory read).
  struct Written {
    at::Tensor device; // the argument
    at::Tensor host;   // what the CPU kernel writes
    at::Tensor home;   // a dense argument's bytes as they were
  };
  std::vector<Written> written;
  std::vector<at::Tensor> device_components; // what results may alias
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    const bool is_written = alias != nullptr && alias->isWrite();
    if (args[i].isDevice() && args[i].toDevice().is_privateuseone()) {
      cpu_stack.emplace_back(c10::Device(c10::kCPU));
      continue;
    }
    cpu_stack.push_back(map_tensors(args[i], [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_privateuseone()) {
        return t;
      }
      for (const at::Tensor& c : components(t)) {
        device_components.push_back(c);
      }
      if (has_components(t)) {
        at::Tensor host = with_grad_flag(host_alias(t), t);
        if (is_written) {
          written.push_back({t, host, {}});
        }
        return host;
      }
      if (!is_written) {
        return with_grad_flag(cpu_alias(t), t);
      }
      written.push_back({t, resizable_cpu_alias(t), cpu_alias(t)});
      return written.back().host;
    }));
  }

  // 2. The CPU's kernel, on the stream, waited for.
  struct State {
    torch::jit::Stack stack;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  state->stack = std::move(cpu_stack);
  std::vector<std::pair<at::Tensor, at::Tensor>> dense_written; // (host, home)
  for (const Written& w : written) {
    if (w.home.defined()) {
      dense_written.emplace_back(w.host, w.home);
    }
  }
  c10::accinte::launch_kernel(stream, [op, state, dense_written]() {
    try {
      c10::impl::ExcludeDispatchKeyGuard no_autograd(
          c10::autograd_dispatch_keyset_with_ADInplaceOrView);
      static DiscardWarnings discard;
      c10::WarningUtils::WarningHandlerGuard quiet(&discard);
      op.callBoxed(&state->stack);
      for (const auto& [host, home] : dense_written) {
        if (host.sizes() == home.sizes()) {
          settle(host, home);
        }
      }
    } catch (...) {
      state->error = std::current_exception();
    }
  });
  stream.synchronize();
  if (state->error) {
    try {
      std::rethrow_exception(state->error);
    } catch (const c10::NotImplementedError& e) {
      TORCH_CHECK_NOT_IMPLEMENTED(false, schema.operator_name(), " is not supported for ",
                                  layout.empty() ? "these" : layout,
                                  " tensors on accinte: accinte runs the CPU's kernel for "
                                  "this layout and the CPU has none (", first_sentence(e.msg()), ")");
    }
  }

  // 3. Results to the device.
  const auto to_device = [&](const at::Tensor& c) -> at::Tensor {
    for (const at::Tensor& input : device_components) {
      if (lies_in(c, input)) {
        return device_view_of(input, c);
      }
    }
    at::Tensor out = at::detail::empty_strided_generic(
        c.sizes(), c.strides(), c10::accinte::getDeviceAllocator(),
        c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c.scalar_type());
    if (c.numel() > 0) {
      c10::accinte::launch_kernel(stream, [src = c, dst = cpu_alias(out)]() mutable {
        dst.copy_(src);
      });
    }
    return out;
  };
  for (const Written& w : written) {
    if (!w.home.defined()) {
      update_from_host(w.device, w.host, to_device);
    } else if (w.host.sizes() != w.home.sizes()) {
      w.device.resize_(w.host.sizes());
      c10::accinte::launch_kernel(stream, [src = w.host, dst = cpu_alias(w.device)]() mutable {
        dst.copy_(src);
      });
    }
  }
  torch::jit::drop(*stack, num_args);
  for (const IValue& result : state->stack) {
    stack->push_back(map_tensors(result, [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_cpu()) {
        return t;
      }
      for (const Written& w : written) {
        if (t.is_same(w.host)) {
          return w.device;
        }
      }
      return device_counterpart(t, device, to_device);
    }));
  }
}
// LITERALINCLUDE END: OPERATOR LAYOUT FALLBACK

} // namespace at::native::accinte
