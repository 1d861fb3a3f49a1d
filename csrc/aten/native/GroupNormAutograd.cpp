// Note [accinte group_norm gradients in the CPU's memory format]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's derivative formula for native_group_norm hands its backward
// kernel the gradient and the input in the input's memory format on the CPU
// (input.suggest_memory_format()), and contiguous on every other device (as
// CUDA's kernel wants). The CPU's backward kernel walks a channels-last
// input in another order than a contiguous one, so accinte, which runs that
// very kernel, got gradients a few ulp off the CPU's for a channels-last
// input (diffusers' UNets run channels-last). accinte's autograd kernel for
// native_group_norm therefore
//
//   - calls PyTorch's own autograd kernel (the Autograd alias key's) for an
//     input whose suggested memory format is contiguous, where the formula's
//     two branches agree, and under forward-mode AD (whose formula it keeps);
//   - for any other input records GroupNormFunction, whose backward is the
//     formula's CPU branch: the backward kernel on the gradient and the input
//     in the input's memory format. Under grad mode (a double backward) or
//     with gradients for mean and rstd, the formula takes a composite that
//     does not depend on the device; the Function evaluates it with PyTorch's
//     own backward node for the operator (NativeGroupNormBackward0), built on
//     the Function's saved input and its own mean and rstd outputs.
//
// Why the Function's own outputs: a double backward differentiates the graph
// that composite built. On the CPU every gradient it produces for the output,
// mean and rstd reaches one node, which evaluates the composite once on the
// three. Recomputing the operator for the composite would send mean's and
// rstd's gradients to the recomputed node and the output's to this Function:
// the same mathematics in two sums, 4.8e-7 off when the output's gradient
// depends on the output (a loss y.pow(2).sum()). Built on the Function's
// outputs, the graph sends all three here, as on the CPU.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/native_group_norm.h>
#include <ATen/ops/native_group_norm_backward.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/forward_grad.h>
#include <torch/csrc/autograd/generated/Functions.h>
#include <torch/library.h>

namespace at::native::accinte {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Outputs = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// PyTorch's autograd kernel for native_group_norm (VariableType's), which the
// accinte kernel below shadows on AutogradPrivateUse1.
Outputs default_autograd(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                         const std::optional<at::Tensor>& bias, int64_t N, int64_t C,
                         int64_t HxW, int64_t group, double eps) {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::native_group_norm", "");
  torch::jit::Stack stack{input, weight, bias, N, C, HxW, group, eps};
  op.callBoxedForDispatchKey(c10::DispatchKey::Autograd, stack);
  return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
}

// Whether the gradient of tensor argument `i` (input, weight, bias) is
// wanted. The node has an edge per tensor passed: an absent weight or bias
// has none, so the indices shift.
bool wants_grad(AutogradContext* ctx, const variable_list& saved, int i) {
  if (!saved[i].defined()) {
    return false;
  }
  int edge = 0;
  for (int j = 0; j < i; ++j) {
    edge += saved[j].defined() ? 1 : 0;
  }
  return ctx->needs_input_grad(edge);
}

// LITERALINCLUDE START: GROUP NORM CPU FORMULA
struct GroupNormFunction : torch::autograd::Function<GroupNormFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const std::optional<at::Tensor>& weight,
                               const std::optional<at::Tensor>& bias, int64_t N, int64_t C,
                               int64_t HxW, int64_t group, double eps) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    // Gradients of outputs nobody used (mean and rstd, almost always) stay
    // undefined, as the formula expects, rather than zeros.
    ctx->set_materialize_grads(false);
    auto [out, mean, rstd] = at::native_group_norm(input, weight, bias, N, C, HxW, group, eps);
    ctx->save_for_backward({input, weight.value_or(at::Tensor()),
                            bias.value_or(at::Tensor()), mean, rstd});
    ctx->saved_data["N"] = N;
    ctx->saved_data["C"] = C;
    ctx->saved_data["HxW"] = HxW;
    ctx->saved_data["group"] = group;
    ctx->saved_data["eps"] = eps;
    return {out, mean, rstd};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const int64_t N = ctx->saved_data["N"].toInt();
    const int64_t C = ctx->saved_data["C"].toInt();
    const int64_t HxW = ctx->saved_data["HxW"].toInt();
    const int64_t group = ctx->saved_data["group"].toInt();
    if (at::GradMode::is_enabled() || grads[1].defined() || grads[2].defined()) {
      return device_independent_branch(ctx, saved, grads);
    }
    if (!grads[0].defined()) {
      return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor(), at::Tensor()};
    }
    const auto format = input.suggest_memory_format(); // the CPU branch of the formula
    auto [dx, dw, db] = at::native_group_norm_backward(
        grads[0].contiguous(format), input.contiguous(format), saved[3], saved[4],
        weight.defined() ? std::optional<at::Tensor>(weight) : std::nullopt, N, C, HxW, group,
        {wants_grad(ctx, saved, 0), wants_grad(ctx, saved, 1), wants_grad(ctx, saved, 2)});
    return {dx, dw, db, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }

  // The formula's device-independent branch, evaluated by PyTorch's own
  // backward node for native_group_norm on this node's saved input and its
  // own mean and rstd outputs: a graph built here (a double backward) then
  // sends the gradients of mean and rstd back to this node, together with
  // the output's, as the CPU's graph sends all three to its one node.
  static variable_list device_independent_branch(AutogradContext* ctx,
                                                 const variable_list& saved,
                                                 const variable_list& grads) {
    using torch::autograd::SavedVariable;
    auto node = c10::make_intrusive<torch::autograd::generated::NativeGroupNormBackward0>();
    node->set_next_edges(torch::autograd::collect_next_edges(saved[0], saved[1], saved[2]));
    node->input_ = SavedVariable(saved[0], /*is_output=*/false);
    node->weight_ = SavedVariable(saved[1], /*is_output=*/false);
    node->result1_ = SavedVariable(saved[3], /*is_output=*/false);
    node->result2_ = SavedVariable(saved[4], /*is_output=*/false);
    node->N = ctx->saved_data["N"].toInt();
    node->C = ctx->saved_data["C"].toInt();
    node->HxW = ctx->saved_data["HxW"].toInt();
    node->group = ctx->saved_data["group"].toInt();
    node->eps = ctx->saved_data["eps"].toDouble();
    const variable_list found = node->apply(variable_list(grads));
    variable_list result(8);
    for (int i = 0; i < 3; ++i) {
      if (wants_grad(ctx, saved, i)) {
        result[i] = found[i];
      }
    }
    return result;
  }
};
// LITERALINCLUDE END: GROUP NORM CPU FORMULA

bool has_forward_grad(const at::Tensor& t) {
  return t.defined() && t._fw_grad(/*level=*/0).defined();
}

Outputs native_group_norm_autograd(const at::Tensor& input,
                                   const std::optional<at::Tensor>& weight,
                                   const std::optional<at::Tensor>& bias, int64_t N, int64_t C,
                                   int64_t HxW, int64_t group, double eps) {
  const at::Tensor& w = weight.has_value() ? *weight : at::Tensor();
  const at::Tensor& b = bias.has_value() ? *bias : at::Tensor();
  const bool records_gradient =
      at::GradMode::is_enabled() && (input.requires_grad() || (w.defined() && w.requires_grad()) ||
                                     (b.defined() && b.requires_grad()));
  if (!records_gradient || input.suggest_memory_format() == at::MemoryFormat::Contiguous ||
      has_forward_grad(input) || has_forward_grad(w) || has_forward_grad(b)) {
    return default_autograd(input, weight, bias, N, C, HxW, group, eps);
  }
  const variable_list out =
      GroupNormFunction::apply(input, weight, bias, N, C, HxW, group, eps);
  return {out[0], out[1], out[2]};
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("native_group_norm", TORCH_FN(native_group_norm_autograd));
}

} // namespace
} // namespace at::native::accinte
