#pragma once
// f64 oracles for the recurrent cells and layers (oa/ml/rnn.hpp,
// oa/ml/nn/rnn.hpp), written from the equations of torch.nn.LSTM and
// torch.nn.GRU's documentation. Row-major vectors.
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "reference/elementwise.hpp"
#include "reference/linear.hpp"

namespace oa::reference {

// One LSTM step: gates gx (+ gh unless empty) [B, 4H] in the order i, f, g,
// o; c_prev [B, H]. Returns (h, c).
inline std::pair<std::vector<double>, std::vector<double>> lstm_cell(const std::vector<double>& gx, const std::vector<double>& gh,
                                                                     const std::vector<double>& c_prev, std::int64_t H) {
  const std::int64_t B = static_cast<std::int64_t>(c_prev.size()) / H;
  std::vector<double> h(c_prev.size()), c(c_prev.size());
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < H; ++j) {
      auto a = [&](std::int64_t gate) {
        const std::size_t k = static_cast<std::size_t>(b * 4 * H + gate * H + j);
        return gx[k] + (gh.empty() ? 0.0 : gh[k]);
      };
      const std::size_t e = static_cast<std::size_t>(b * H + j);
      c[e] = ::ref::sigmoid(a(1)) * c_prev[e] + ::ref::sigmoid(a(0)) * std::tanh(a(2));
      h[e] = ::ref::sigmoid(a(3)) * std::tanh(c[e]);
    }
  return {h, c};
}

// One GRU step: gx, gh [B, 3H] in the order r, z, n; h_prev [B, H].
inline std::vector<double> gru_cell(const std::vector<double>& gx, const std::vector<double>& gh, const std::vector<double>& h_prev,
                                    std::int64_t H) {
  const std::int64_t B = static_cast<std::int64_t>(h_prev.size()) / H;
  std::vector<double> h(h_prev.size());
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < H; ++j) {
      auto at = [&](std::int64_t gate) { return static_cast<std::size_t>(b * 3 * H + gate * H + j); };
      const double r = ::ref::sigmoid(gx[at(0)] + gh[at(0)]), z = ::ref::sigmoid(gx[at(1)] + gh[at(1)]);
      const double n = std::tanh(gx[at(2)] + r * gh[at(2)]);
      const std::size_t e = static_cast<std::size_t>(b * H + j);
      h[e] = (1 - z) * n + z * h_prev[e];
    }
  return h;
}

// One recurrent layer's weights, as torch.nn.LSTM / GRU name them (biases may be empty).
struct RecurrentLayer {
  std::vector<double> weight_ih, weight_hh, bias_ih, bias_hh;
};

// One layer's recurrence (oa::ml::lstm_layer / gru_layer) over gx [T, B, G * H]
// from h and c [B, H] (c unused by GRU). Returns out [T, B, H], h_n, c_n.
inline std::vector<std::vector<double>> recurrence(bool lstm, const std::vector<double>& gx, const std::vector<double>& weight_hh,
                                                   const std::vector<double>& bias_hh, std::vector<double> h, std::vector<double> c,
                                                   std::int64_t T, std::int64_t B, std::int64_t H) {
  const std::int64_t G = lstm ? 4 : 3;
  std::vector<double> out;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::vector<double> gxt(gx.begin() + t * B * G * H, gx.begin() + (t + 1) * B * G * H);
    const std::vector<double> gh = linear(h, weight_hh, bias_hh, B, H, G * H);
    if (lstm) {
      std::tie(h, c) = lstm_cell(gxt, gh, c, H);
    } else {
      h = gru_cell(gxt, gh, h, H);
    }
    out.insert(out.end(), h.begin(), h.end());
  }
  return {out, h, c};
}

// A stack of LSTM (lstm true) or GRU layers over x [T, B, I] from states h0,
// c0 [L, B, H] (zeros when empty; c0 unused by GRU). Returns the output
// [T, B, H], then h_n and (LSTM) c_n [L, B, H].
inline std::vector<std::vector<double>> recurrent(bool lstm, const std::vector<RecurrentLayer>& layers, std::vector<double> x,
                                                  std::int64_t T, std::int64_t B, std::int64_t I, std::int64_t H,
                                                  const std::vector<double>& h0 = {}, const std::vector<double>& c0 = {}) {
  const std::size_t state = static_cast<std::size_t>(B * H);
  const std::int64_t G = lstm ? 4 : 3;
  std::vector<double> hn, cn;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const RecurrentLayer& l = layers[k];
    const std::int64_t in = k == 0 ? I : H;
    std::vector<double> h(state), c(state);
    if (!h0.empty()) h.assign(h0.begin() + static_cast<std::ptrdiff_t>(k * state), h0.begin() + static_cast<std::ptrdiff_t>((k + 1) * state));
    if (!c0.empty()) c.assign(c0.begin() + static_cast<std::ptrdiff_t>(k * state), c0.begin() + static_cast<std::ptrdiff_t>((k + 1) * state));
    const std::vector<std::vector<double>> r = recurrence(lstm, linear(x, l.weight_ih, l.bias_ih, T * B, in, G * H), l.weight_hh, l.bias_hh, h, c, T, B, H);
    x = r[0];
    hn.insert(hn.end(), r[1].begin(), r[1].end());
    cn.insert(cn.end(), r[2].begin(), r[2].end());
  }
  std::vector<std::vector<double>> result{x, hn};
  if (lstm) result.push_back(cn);
  return result;
}

}  // namespace oa::reference
