#include <csrc/aten/native/Rnn.h>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/zeros_like.h>

namespace at::native::accinte {
namespace {

bool has_value(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// The checks of CUDA's kernels: 2-d gates of equal shape, `gates` gates per
// hidden unit, biases both present or both absent.
void check_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                const at::Tensor& hidden, const std::optional<at::Tensor>& input_bias,
                const std::optional<at::Tensor>& hidden_bias, int64_t gates, const char* name) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), name,
              ": expected 2-d input and hidden gates of the same shape, got ",
              input_gates.sizes(), " and ", hidden_gates.sizes());
  TORCH_CHECK(hidden.dim() == 2 && hidden.size(0) == input_gates.size(0) &&
                  input_gates.size(1) == gates * hidden.size(1),
              name, ": gates of shape ", input_gates.sizes(), " do not match a state of shape ",
              hidden.sizes());
  TORCH_CHECK(has_value(input_bias) == has_value(hidden_bias), name,
              ": expected both biases or neither");
  if (has_value(input_bias)) {
    TORCH_CHECK(input_bias->dim() == 1 && input_bias->size(0) == input_gates.size(1) &&
                    hidden_bias->sizes() == input_bias->sizes(),
                name, ": expected biases of shape [", input_gates.size(1), "]");
  }
}

} // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  check_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias, 4, "_thnn_fused_lstm_cell");
  // A fresh contiguous tensor: activated in place, it becomes the workspace.
  at::Tensor workspace = input_gates + hidden_gates;
  if (has_value(input_bias)) {
    workspace.add_(*input_bias).add_(*hidden_bias);
  }
  const auto g = workspace.chunk(4, 1);
  const at::Tensor& in = g[0].sigmoid_();
  const at::Tensor& forget = g[1].sigmoid_();
  const at::Tensor& cell = g[2].tanh_();
  const at::Tensor& out = g[3].sigmoid_();
  at::Tensor cy = (forget * cx).add_(in * cell);
  at::Tensor hy = out * cy.tanh();
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  if (!has_value(grad_hy) && !has_value(grad_cy)) {
    return {};
  }
  const auto g = workspace.chunk(4, 1);
  const at::Tensor& in = g[0];
  const at::Tensor& forget = g[1];
  const at::Tensor& cell = g[2];
  const at::Tensor& out = g[3];
  const at::Tensor tanh_cy = cy.tanh();
  // Gradient reaching cy: directly, and through hy = out * tanh(cy).
  at::Tensor grad_c = has_value(grad_cy) ? grad_cy->clone() : at::zeros_like(cx);
  at::Tensor grad_out;
  if (has_value(grad_hy)) {
    grad_c.add_(*grad_hy * out * at::rsub(tanh_cy * tanh_cy, 1));
    grad_out = *grad_hy * tanh_cy * at::rsub(out, 1) * out;
  } else {
    grad_out = at::zeros_like(out);
  }
  const at::Tensor grad_in = grad_c * cell * at::rsub(in, 1) * in;
  const at::Tensor grad_forget = grad_c * cx * at::rsub(forget, 1) * forget;
  const at::Tensor grad_cell = grad_c * in * at::rsub(cell * cell, 1);
  at::Tensor grad_gates = at::cat({grad_in, grad_forget, grad_cell, grad_out}, 1);
  at::Tensor grad_cx = grad_c * forget;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  check_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias, 3, "_thnn_fused_gru_cell");
  at::Tensor igates = input_gates;
  at::Tensor hgates = hidden_gates;
  if (has_value(input_bias)) {
    igates = igates + *input_bias;
    hgates = hgates + *hidden_bias;
  }
  const auto i = igates.chunk(3, 1);
  const auto h = hgates.chunk(3, 1);
  const at::Tensor reset = (i[0] + h[0]).sigmoid_();
  const at::Tensor update = (i[1] + h[1]).sigmoid_();
  const at::Tensor& hidden_new = h[2];
  const at::Tensor new_gate = i[2].add(hidden_new * reset).tanh_();
  at::Tensor hy = (hx - new_gate).mul_(update).add_(new_gate);
  at::Tensor workspace = at::cat({reset, update, new_gate, hx, hidden_new}, 1);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
thnn_fused_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                             bool has_bias) {
  TORCH_CHECK(workspace.dim() == 2 && grad_hy.dim() == 2 &&
                  workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1),
              "_thnn_fused_gru_cell_backward: a workspace of shape ", workspace.sizes(),
              " does not match a gradient of shape ", grad_hy.sizes());
  const auto w = workspace.chunk(5, 1);
  const at::Tensor& reset = w[0];
  const at::Tensor& update = w[1];
  const at::Tensor& new_gate = w[2];
  const at::Tensor& hx = w[3];
  const at::Tensor& hidden_new = w[4];
  const at::Tensor grad_update = grad_hy * (hx - new_gate) * at::rsub(update, 1) * update;
  at::Tensor grad_hx = grad_hy * update;
  const at::Tensor grad_input_new =
      grad_hy * at::rsub(update, 1) * at::rsub(new_gate * new_gate, 1);
  const at::Tensor grad_hidden_new = grad_input_new * reset;
  const at::Tensor grad_reset = grad_input_new * hidden_new * at::rsub(reset, 1) * reset;
  at::Tensor grad_input_gates = at::cat({grad_reset, grad_update, grad_input_new}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_reset, grad_update, grad_hidden_new}, 1);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

} // namespace at::native::accinte
