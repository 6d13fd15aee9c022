#pragma once
// Fused recurrent cells (oa::ml): lstm_cell, gru_cell, and the recurrence of
// one layer over a sequence, lstm_layer and gru_layer. The modules LSTM and
// GRU over the layers are in oa/ml/nn/rnn.hpp.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
//
// A cell takes its gate pre-activations from GEMMs done beforehand with
// oa::ml::linear (gates_x = x W_ih^T + b_ih, gates_h = h W_hh^T + b_hh, as
// torch.nn.LSTMCell / GRUCell lay out weight_ih and weight_hh), so that a
// sequence computes its input projection for all time steps in one GEMM and
// per step only the recurrent GEMM and the cell. Each cell is one dispatch
// forward and one backward, elementwise over [B, H] (sigmoid and tanh in a
// form that saturates without overflow: large pre-activations give 0, 1 or
// +-1, never NaN).
#include <utility>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// The LSTM cell (Hochreiter & Schmidhuber 1997, with the forget gate of Gers
// et al. 2000; torch.nn.LSTMCell after its two GEMMs). With a = gates_x +
// gates_h ([B, 4H], blocks of H columns in PyTorch's order i, f, g, o):
//   i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o),
//   c = f * c_prev + i * g,  h = o * tanh(c).
// gates_x [B, 4H]; gates_h [B, 4H] or undefined (Matrix(): gates_x then
// holds the summed pre-activations); c_prev [B, H]; B >= 1, H >= 1. Returns
// (h, c), both [B, H]. Gradients for gates_x, gates_h and c_prev from those
// of h and c (the gate pre-activations' gradient is that of both gates
// operands); the backward reads the activated gates saved by the forward.
// Errors: InvalidArgument naming "oa::ml::lstm_cell", the argument and the
// shapes for a non-f32 or undefined operand, gates not rank 2 with a column
// count divisible by 4, gates_h's shape not gates_x's, c_prev not
// [B, cols / 4], zero extents, operands on different engines. Semantic op
// "oa::ml::lstm_cell" (one dispatch), inputs the given operands.
std::pair<Matrix, Matrix> lstm_cell(const Matrix& gates_x, const Matrix& gates_h, const Matrix& c_prev);

// The GRU cell (Cho et al. 2014; torch.nn.GRUCell after its two GEMMs).
// gates_x = x W_ih^T + b_ih and gates_h = h_prev W_hh^T + b_hh, both [B, 3H]
// with blocks of H columns in PyTorch's order r, z, n:
//   r = sigmoid(gx_r + gh_r), z = sigmoid(gx_z + gh_z),
//   n = tanh(gx_n + r * gh_n),  h = (1 - z) * n + z * h_prev.
// gates_h is required (the n gate scales its recurrent part by r). h_prev
// [B, H]; B >= 1, H >= 1. Returns h [B, H]. Gradients for all three
// operands; the backward reads the r, z, n saved by the forward, gates_h and
// h_prev. Errors: as lstm_cell (columns divisible by 3), naming
// "oa::ml::gru_cell". Semantic op "oa::ml::gru_cell" (one dispatch).
Matrix gru_cell(const Matrix& gates_x, const Matrix& gates_h, const Matrix& h_prev);

// One LSTM layer over a sequence (the recurrence of torch.nn.LSTM, after its
// input projection): for t = 0 .. T - 1, from h_{-1} = h0 and c_{-1} = c0,
//   (h_t, c_t) = lstm_cell(gates_x[t], h_{t-1} weight_hh^T + bias_hh, c_{t-1}).
// gates_x [T, B, 4H] (x_t W_ih^T + b_ih for every step, one GEMM beforehand);
// weight_hh [4H, H]; bias_hh [4H] or undefined; h0, c0 [B, H]; T, B, H >= 1.
// Returns (out [T, B, H] holding every h_t, c_{T-1} [B, H]). Per step one
// recurrent GEMM and one cell dispatch on [T, ...] buffers (no per-step
// copies); the backward runs the steps in reverse (one cell backward and one
// GEMM each) and gives weight_hh's gradient by GEMMs over all steps at once
// (the h0 term and the rest) and bias_hh's as one column sum, as cuDNN's RNN
// backward does, rather than a gradient per step. Gradients for every
// operand. Under autocast the layer runs in f32, its recurrent GEMM included.
// Errors: InvalidArgument naming "oa::ml::lstm_layer", the argument and the
// shapes for a non-f32 operand, gates_x not rank 3 with nonzero extents and a
// last extent divisible by 4, weight_hh not [4H, H], bias_hh not [4H], h0 or
// c0 not [B, H], a gates_x element count past 2^32; operands on different
// engines. ResourceExhausted, naming "oa::ml::lstm_layer" first, when a
// [T, ...] buffer or a GEMM operand (the [B, 4H] recurrent gates) exceeds
// the device's maxStorageBufferRange.
// Semantic op "oa::ml::lstm_layer" (2T dispatches or more: a GEMM may split K).
std::pair<Matrix, Matrix> lstm_layer(const Matrix& gates_x, const Matrix& weight_hh, const Matrix& bias_hh, const Matrix& h0,
                                     const Matrix& c0);

// One GRU layer over a sequence (the recurrence of torch.nn.GRU): for
// t = 0 .. T - 1, from h_{-1} = h0,
//   h_t = gru_cell(gates_x[t], h_{t-1} weight_hh^T + bias_hh, h_{t-1}).
// gates_x [T, B, 3H]; weight_hh [3H, H]; bias_hh [3H] or undefined; h0
// [B, H]. Returns out [T, B, H] holding every h_t. Steps, backward and
// errors as lstm_layer's (columns divisible by 3), naming "oa::ml::gru_layer".
Matrix gru_layer(const Matrix& gates_x, const Matrix& weight_hh, const Matrix& bias_hh, const Matrix& h0);

}  // namespace oa::ml
