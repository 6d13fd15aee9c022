#pragma once
// Recurrent modules (torch.nn.LSTM, torch.nn.GRU) over the layer ops of
// oa/ml/rnn.hpp.
//
// Parameters, per layer k (named and laid out as PyTorch's, so state_dicts
// match): `weight_ih_l{k}` [G * H, I_k], `weight_hh_l{k}` [G * H, H] and, with
// bias, `bias_ih_l{k}`, `bias_hh_l{k}` [G * H], registered in that order,
// layer after layer; G = 4 for LSTM (gate blocks i, f, g, o), 3 for GRU
// (r, z, n); I_0 = input_size, I_k = hidden_size after. All are initialised
// U(-1/sqrt(H), 1/sqrt(H)) (torch.nn.RNNBase.reset_parameters) from seeds
// drawn from `generator` in registration order.
//
// Computation per layer: the input projection of every time step in one GEMM
// (oa::ml::linear over [T * B, I]), then the recurrence over the steps in one
// op (oa::ml::lstm_layer / gru_layer: per step a recurrent GEMM and the fused
// cell), whose backward is backpropagation through time. Dropout (oa::ml::dropout, a fresh mask per
// call from a Generator seeded once from `generator`) applies to the outputs
// of every layer but the last, in training mode only, as PyTorch's `dropout`.
// Not supported: bidirectional, proj_size, unbatched (rank-2) input.
//
// Shapes: input [T, B, I] (batch_first: [B, T, I]) -> output [T, B, H]
// ([B, T, H]) holding the last layer's h at every step; states [num_layers,
// B, H] (also with batch_first, as PyTorch). T, B >= 1.
//
// Errors (oa::Error, InvalidArgument naming the module): constructor sizes
// below 1, dropout outside [0, 1]; forward: input not of rank 3 with nonzero
// extents and I = input_size, a state not [num_layers, B, H], an input or
// state not f32 (f16 and bf16 pass under autocast, as torch's) or on another
// engine than the parameters; and what the ops throw, of its kind with the
// module's name first (a GEMM past maxStorageBufferRange: ResourceExhausted
// "oa::ml::nn::LSTM: oa::ml::linear: GEMM (...) ... exceeds ...").
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// The options of LSTM and GRU beyond the sizes (torch.nn.LSTM's keywords).
struct RNNOptions {
  std::int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;  // between layers, in training
};

// What LSTM and GRU share (torch.nn.RNNBase): the parameters, the input
// layout, the loop over layers with each layer's input projection, and
// dropout between layers; each gives only its layer op.
class RNNBase : public Module {
 public:
  std::int64_t input_size() const { return input_size_; }
  std::int64_t hidden_size() const { return hidden_size_; }
  const RNNOptions& options() const { return options_; }
  // Layer k's parameters (the biases undefined without bias).
  const Parameter& weight_ih(std::int64_t k) const { return layers_.at(static_cast<std::size_t>(k)).weight_ih; }
  const Parameter& weight_hh(std::int64_t k) const { return layers_.at(static_cast<std::size_t>(k)).weight_hh; }
  const Parameter& bias_ih(std::int64_t k) const { return layers_.at(static_cast<std::size_t>(k)).bias_ih; }
  const Parameter& bias_hh(std::int64_t k) const { return layers_.at(static_cast<std::size_t>(k)).bias_hh; }

 protected:
  // `gates`: gate blocks per layer (4 for LSTM, 3 for GRU); `name`: the
  // module's name in errors.
  RNNBase(std::int64_t input_size, std::int64_t hidden_size, std::int64_t gates, const char* name, Generator& generator,
          const RNNOptions& options, std::optional<Engine> engine);

  // One layer's recurrence over the steps: from its input gates
  // x W_ih^T + b_ih [T, B, G * H], weight_hh, bias_hh (undefined without
  // bias) and initial state (h, or h and c: each [B, H], h first), returns
  // the h sequence [T, B, H] and leaves the final c (LSTM) in state[1].
  using Recurrence =
      std::function<Matrix(const Matrix& gates_x, const Matrix& weight_hh, const Matrix& bias_hh, std::vector<Matrix>& state)>;
  struct Sequence {
    Matrix output;              // [T, B, H] or [B, T, H] (batch_first)
    std::vector<Matrix> state;  // the final value of each state, [num_layers, B, H]
  };
  // The sequence of input [T, B, I] or [B, T, I] (batch_first; checked) from
  // the initial states, each [num_layers, B, H] (named in errors) or
  // undefined (zeros): every layer runs `recurrence`, its h sequence the
  // next layer's input, with dropout between layers in training.
  Sequence run(const Matrix& input, const std::vector<std::pair<Matrix, const char*>>& initial, const Recurrence& recurrence);

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  struct Layer {
    Parameter weight_ih, weight_hh, bias_ih, bias_hh;
  };
  // Each layer's initial state [B, H] from `state` [num_layers, B, H] (`arg`
  // in errors), or zeros when it is undefined.
  std::vector<Matrix> layer_states(const Matrix& state, std::int64_t batch, const char* arg) const;
  // Throws InvalidArgument, naming `arg` and the module, when m is
  // undefined, of a dtype forward does not take, or on another engine than
  // the parameters.
  void require_operand(const Matrix& m, const char* arg) const;
  // Layer k's input projection of x [T, B, I_k]: [T, B, G * H].
  Matrix input_gates(std::int64_t k, const Matrix& x) const;

  std::int64_t input_size_, hidden_size_;
  RNNOptions options_;
  const char* name_;
  std::vector<Layer> layers_;
  Generator masks_;
};

// (h, c) of every layer, each [num_layers, B, H] (PyTorch's (h_n, c_n)).
struct LSTMState {
  Matrix h, c;
};
struct LSTMOutput {
  Matrix output;
  LSTMState state;
};

// torch.nn.LSTM (Hochreiter & Schmidhuber 1997) with oa::ml::lstm_cell.
class LSTM : public RNNBase {
 public:
  LSTM(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options = {},
       std::optional<Engine> engine = {});
  // The output sequence, from zero initial states.
  Matrix forward(const Matrix& input) override;
  // lstm(input, (h0, c0)): the output and the final (h_n, c_n). Either of
  // state.h and state.c may be undefined (zeros).
  LSTMOutput forward_with_state(const Matrix& input, const LSTMState& state = {});
  std::string type_name() const override { return "LSTM"; }
};

struct GRUOutput {
  Matrix output;
  Matrix h;  // [num_layers, B, H] (PyTorch's h_n)
};

// torch.nn.GRU (Cho et al. 2014) with oa::ml::gru_cell.
class GRU : public RNNBase {
 public:
  GRU(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options = {},
      std::optional<Engine> engine = {});
  // The output sequence, from a zero initial state.
  Matrix forward(const Matrix& input) override;
  // gru(input, h0): the output and the final h_n; h0 may be undefined (zeros).
  GRUOutput forward_with_state(const Matrix& input, const Matrix& h0 = Matrix());
  std::string type_name() const override { return "GRU"; }
};

}  // namespace oa::ml::nn
