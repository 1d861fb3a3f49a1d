#pragma once
// The fused RNN cells of LSTM and GRU (registered in ../AccInteExtra.cpp).
//
// ATen's recurrent layers (aten/src/ATen/native/RNN.cpp) send every step of
// an LSTM or GRU on a PrivateUse1 device to _thnn_fused_lstm_cell /
// _thnn_fused_gru_cell, as on CUDA, while on the CPU they compute the cell
// from elementwise operators instead. The fused cells have CUDA kernels only,
// so the fallback has no CPU kernel to run: these versions compose them from
// operators that do run on accinte (queued like any other). Workspaces are
// laid out as CUDA's, which the Meta kernels and the backward formulas expect.

#include <ATen/core/Tensor.h>

namespace at::native::accinte {

/// Returns (hy, cy, workspace); workspace holds the activated gates
/// [input, forget, cell, output] side by side, shape (batch, 4 * hidden).
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

/// Returns (grad_gates, grad_cx, grad_bias); all undefined when both
/// gradients are, grad_bias undefined unless `has_bias`.
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);

/// Returns (hy, workspace); workspace holds [reset gate, update gate, new
/// gate, hx, hidden new-gate part with bias], shape (batch, 5 * hidden).
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);

/// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias,
/// grad_hidden_bias), the biases' undefined unless `has_bias`.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
thnn_fused_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace,
                             bool has_bias);

} // namespace at::native::accinte
