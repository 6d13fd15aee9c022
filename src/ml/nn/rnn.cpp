// The LSTM and GRU modules over oa::ml::lstm_cell / gru_cell.
#include "oa/ml/nn/rnn.hpp"

#include <cmath>

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

Matrix RNNBase::time_major(const Matrix& input) const {
  detail::require_defined(input, name_, "input");
  const Shape& s = input.shape();
  if (s.rank() != 3 || s.numel() == 0 || s[2] != input_size_)
    fail(ErrorKind::InvalidArgument, "{}: input must be {} with I = input_size {} and nonzero extents; found {}", name_,
         options_.batch_first ? "[B, T, I]" : "[T, B, I]", input_size_, s);
  return options_.batch_first ? matrix::transpose(input, 0, 1) : input;
}

Matrix RNNBase::caller_layout(const Matrix& output) const { return options_.batch_first ? matrix::transpose(output, 0, 1) : output; }

std::vector<Matrix> RNNBase::layer_states(const Matrix& state, std::int64_t batch, const char* arg) const {
  const std::int64_t L = options_.num_layers, H = hidden_size_;
  std::vector<Matrix> out;
  if (!state.defined()) {
    for (std::int64_t k = 0; k < L; ++k) out.push_back(Matrix::zeros(Shape{batch, H}, layers_[0].weight_ih.value().engine()));
    return out;
  }
  if (!(state.shape() == Shape{L, batch, H}))
    fail(ErrorKind::InvalidArgument, "{}: {} must be [num_layers {}, B {}, hidden_size {}]; found {}", name_, arg, L, batch, H,
         state.shape());
  if (L == 1) return {state.reshape({batch, H})};
  for (const Matrix& m : matrix::chunk(state, L, 0)) out.push_back(m.reshape({batch, H}));
  return out;
}

std::vector<Matrix> RNNBase::input_gates(std::int64_t k, const Matrix& x) const {
  const Layer& l = layers_[static_cast<std::size_t>(k)];
  const std::int64_t T = x.shape()[0], B = x.shape()[1];
  const Matrix gates = linear(x.reshape({T * B, x.shape()[2]}), l.weight_ih.value(), l.bias_ih.value());
  const std::int64_t width = gates.shape()[1];
  if (T == 1) return {gates};
  std::vector<Matrix> steps = matrix::chunk(gates.reshape({T, B * width}), T, 0);
  for (Matrix& m : steps) m = m.reshape({B, width});
  return steps;
}

Matrix RNNBase::hidden_gates(std::int64_t k, const Matrix& h) const {
  const Layer& l = layers_[static_cast<std::size_t>(k)];
  return linear(h, l.weight_hh.value(), l.bias_hh.value());
}

Matrix RNNBase::run_layer(std::int64_t k, const Matrix& x, const std::function<Matrix(const Matrix& gates_x)>& step) {
  const std::vector<Matrix> gx = input_gates(k, x);
  std::vector<Matrix> steps;
  steps.reserve(gx.size());
  for (const Matrix& g : gx) steps.push_back(step(g));
  Matrix out = matrix::stack(steps, 0);
  if (k + 1 < options_.num_layers && training() && options_.dropout > 0)
    out = dropout(out, options_.dropout, masks_.next_seed(), true);
  return out;
}

// ── LSTM ────────────────────────────────────────────────────────────────────

LSTM::LSTM(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options,
           std::optional<Engine> engine)
    : RNNBase(input_size, hidden_size, 4, "oa::ml::nn::LSTM", generator, options, engine) {}

Matrix LSTM::forward(const Matrix& input) { return forward_with_state(input).output; }

LSTMOutput LSTM::forward_with_state(const Matrix& input, const LSTMState& state) {
  Matrix x = time_major(input);
  const std::int64_t B = x.shape()[1];
  const std::vector<Matrix> h0 = layer_states(state.h, B, "h0"), c0 = layer_states(state.c, B, "c0");
  std::vector<Matrix> hn, cn;
  for (std::int64_t k = 0; k < options().num_layers; ++k) {
    Matrix h = h0[static_cast<std::size_t>(k)], c = c0[static_cast<std::size_t>(k)];
    x = run_layer(k, x, [&](const Matrix& gx) {
      std::tie(h, c) = lstm_cell(gx, hidden_gates(k, h), c);
      return h;
    });
    hn.push_back(h);
    cn.push_back(c);
  }
  return {caller_layout(x), {matrix::stack(hn, 0), matrix::stack(cn, 0)}};
}

// ── GRU ─────────────────────────────────────────────────────────────────────

GRU::GRU(std::int64_t input_size, std::int64_t hidden_size, Generator& generator, const RNNOptions& options,
         std::optional<Engine> engine)
    : RNNBase(input_size, hidden_size, 3, "oa::ml::nn::GRU", generator, options, engine) {}

Matrix GRU::forward(const Matrix& input) { return forward_with_state(input).output; }

GRUOutput GRU::forward_with_state(const Matrix& input, const Matrix& h0) {
  Matrix x = time_major(input);
  const std::int64_t B = x.shape()[1];
  const std::vector<Matrix> initial = layer_states(h0, B, "h0");
  std::vector<Matrix> hn;
  for (std::int64_t k = 0; k < options().num_layers; ++k) {
    Matrix h = initial[static_cast<std::size_t>(k)];
    x = run_layer(k, x, [&](const Matrix& gx) {
      h = gru_cell(gx, hidden_gates(k, h), h);
      return h;
    });
    hn.push_back(h);
  }
  return {caller_layout(x), matrix::stack(hn, 0)};
}

}  // namespace oa::ml::nn
