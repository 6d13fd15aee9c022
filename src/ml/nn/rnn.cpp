// The LSTM and GRU modules over oa::ml::lstm_layer / gru_layer.
#include "oa/ml/nn/rnn.hpp"

#include <cmath>

#include "oa/matrix/autocast.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/concat.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/ml/functional.hpp"
#include "oa/ml/init.hpp"
#include "oa/ml/rnn.hpp"

namespace oa::ml::nn {

RNNBase::RNNBase(std::int64_t input_size, std::int64_t hidden_size, std::int64_t gates, const char* name, Generator& generator,
                 const RNNOptions& options, std::optional<Engine> engine)
    : input_size_(input_size), hidden_size_(hidden_size), options_(options), name_(name), masks_(0) {
  if (input_size < 1 || hidden_size < 1 || options.num_layers < 1)
    fail(ErrorKind::InvalidArgument, "{}: input_size {}, hidden_size {} and num_layers {} must be >= 1", name, input_size, hidden_size,
         options.num_layers);
  if (!(options.dropout >= 0 && options.dropout <= 1))
    fail(ErrorKind::InvalidArgument, "{}: dropout {} must be in [0, 1]", name, options.dropout);
  const auto bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden_size)));
  auto draw = [&](const std::string& what, std::int64_t k, const Shape& shape) {
    return register_parameter(what + "_l" + std::to_string(k), init::uniform(shape, -bound, bound, generator, engine));
  };
  for (std::int64_t k = 0; k < options.num_layers; ++k) {
    const std::int64_t in = k == 0 ? input_size : hidden_size, rows = gates * hidden_size;
    Layer l;
    l.weight_ih = draw("weight_ih", k, Shape{rows, in});
    l.weight_hh = draw("weight_hh", k, Shape{rows, hidden_size});
    if (options.bias) {
      l.bias_ih = draw("bias_ih", k, Shape{rows});
      l.bias_hh = draw("bias_hh", k, Shape{rows});
    }
    layers_.push_back(std::move(l));
  }
  masks_ = Generator(generator.next_seed());
}

bool RNNBase::rebind_parameter(const std::string& name, const Parameter& p) {
  // name: "<field>_l<k>", as the constructor registers it.
  const std::size_t split = name.rfind("_l");
  Layer& l = layers_.at(std::stoul(name.substr(split + 2)));
  const std::string field = name.substr(0, split);
  (field == "weight_ih" ? l.weight_ih : field == "weight_hh" ? l.weight_hh : field == "bias_ih" ? l.bias_ih : l.bias_hh) = p;
  return true;
}

std::vector<Matrix> RNNBase::layer_states(const Matrix& state, std::int64_t batch, const char* arg) const {
  const std::int64_t L = options_.num_layers, H = hidden_size_;
  std::vector<Matrix> out;
  if (!state.defined()) {
    for (std::int64_t k = 0; k < L; ++k) out.push_back(Matrix::zeros(Shape{batch, H}, layers_[0].weight_ih.value().engine()));
    return out;
  }
  require_operand(state, arg);
  if (!(state.shape() == Shape{L, batch, H}))
    fail(ErrorKind::InvalidArgument, "{}: {} must be [num_layers {}, B {}, hidden_size {}]; found {}", name_, arg, L, batch, H,
         state.shape());

  const Matrix f32 = state.dtype() == DType::F32 ? state : matrix::cast(state, DType::F32);  // the cells run in f32
  if (L == 1) return {f32.reshape({batch, H})};
  for (const Matrix& m : matrix::chunk(f32, L, 0)) out.push_back(m.reshape({batch, H}));
  return out;
}

void RNNBase::require_operand(const Matrix& m, const char* arg) const {
  detail::require_defined(m, name_, arg);
  const bool half = m.dtype() == DType::F16 || m.dtype() == DType::BF16;
  if (m.dtype() != DType::F32 && !(half && autocast_dtype()))
    fail(ErrorKind::InvalidArgument, "{}: {} must be f32 (or f16/bf16 under autocast); found {} {}", name_, arg, to_string(m.dtype()),
         m.shape());
  if (!(m.engine() == layers_[0].weight_ih.value().engine()))
    fail(ErrorKind::InvalidArgument, "{}: {} {} lives on another engine than the module's parameters", name_, arg, m.shape());
}

Matrix RNNBase::input_gates(std::int64_t k, const Matrix& x) const {
  const Layer& l = layers_[static_cast<std::size_t>(k)];
  const std::int64_t T = x.shape()[0], B = x.shape()[1];
  const Matrix gates = linear(x.reshape({T * B, x.shape()[2]}), l.weight_ih.value(), l.bias_ih.value());
  return gates.reshape({T, B, gates.shape()[1]});
}

RNNBase::Sequence RNNBase::run(const Matrix& input, const std::vector<std::pair<Matrix, const char*>>& initial, const Recurrence& recurrence) {
  try {
    require_operand(input, "input");
    const Shape& s = input.shape();
    if (s.rank() != 3 || s.numel() == 0 || s[2] != input_size_)
      fail(ErrorKind::InvalidArgument, "{}: input must be {} with I = input_size {} and nonzero extents; found {}", name_,
           options_.batch_first ? "[B, T, I]" : "[T, B, I]", input_size_, s);

    Matrix x = options_.batch_first ? matrix::transpose(input, 0, 1) : input;  // [T, B, I]
    const std::int64_t T = x.shape()[0], B = x.shape()[1], L = options_.num_layers;
    std::vector<std::vector<Matrix>> initial_states, final_states(initial.size());  // [state][layer]
    for (const auto& [state, arg] : initial) initial_states.push_back(layer_states(state, B, arg));
    for (std::int64_t k = 0; k < L; ++k) {
      std::vector<Matrix> state;
      for (const std::vector<Matrix>& layers : initial_states) state.push_back(layers[static_cast<std::size_t>(k)]);
      const Layer& l = layers_[static_cast<std::size_t>(k)];
      x = recurrence(input_gates(k, x), l.weight_hh.value(), l.bias_hh.value(), state);
      state[0] = matrix::narrow(x, 0, T - 1, 1).reshape({B, hidden_size_});
      if (k + 1 < L && training() && options_.dropout > 0) x = dropout(x, options_.dropout, masks_.next_seed(), true);
      for (std::size_t i = 0; i < state.size(); ++i) final_states[i].push_back(state[i]);
    }
    Sequence out{options_.batch_first ? matrix::transpose(x, 0, 1) : x, {}};
    for (const std::vector<Matrix>& layers : final_states) out.state.push_back(matrix::stack(layers, 0));
    return out;
  } catch (const Error& e) {  // an op's error (a GEMM past a device limit) names the module first
    throw with_context(e, name_);
  }
}

// ── LSTM ────────────────────────────────────────────────────────────────────

LSTM::LSTM(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options,
           std::optional<Engine> engine)
    : RNNBase(input_size, hidden_size, 4, "oa::ml::nn::LSTM", generator, options, engine) {}

Matrix LSTM::forward(const Matrix& input) { return forward_with_state(input).output; }

LSTMOutput LSTM::forward_with_state(const Matrix& input, const LSTMState& state) {
  Sequence r = run(input, {{state.h, "h0"}, {state.c, "c0"}},
                   [](const Matrix& gx, const Matrix& w, const Matrix& b, std::vector<Matrix>& s) {
                     auto [out, c] = lstm_layer(gx, w, b, s[0], s[1]);
                     s[1] = c;
                     return out;
                   });
  return {r.output, {r.state[0], r.state[1]}};
}

// ── GRU ─────────────────────────────────────────────────────────────────────

GRU::GRU(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options,
         std::optional<Engine> engine)
    : RNNBase(input_size, hidden_size, 3, "oa::ml::nn::GRU", generator, options, engine) {}

Matrix GRU::forward(const Matrix& input) { return forward_with_state(input).output; }

GRUOutput GRU::forward_with_state(const Matrix& input, const Matrix& h0) {
  Sequence r = run(input, {{h0, "h0"}},
                   [](const Matrix& gx, const Matrix& w, const Matrix& b, std::vector<Matrix>& s) { return gru_layer(gx, w, b, s[0]); });
  return {r.output, r.state[0]};
}

}  // namespace oa::ml::nn
