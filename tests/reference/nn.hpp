#pragma once
// f64 oracles for the nn ops (oa/ml/functional.hpp), written from the
// definitions (the PyTorch documentation of each function), not from the
// shaders. Row-major vectors; shapes passed as extents.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference/constants.hpp"

namespace oa::reference {

// Layer normalisation of each row of x [R, D]; empty weight / bias mean 1 / 0.
inline std::vector<double> layer_norm(const std::vector<double>& x, std::int64_t D, const std::vector<double>& weight,
                                      const std::vector<double>& bias, double eps) {
  std::vector<double> y(x.size());
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / D;
  for (std::int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < D; ++j) mean += x[r * D + j];
    mean /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) var += (x[r * D + j] - mean) * (x[r * D + j] - mean);
    var /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) {
      double v = (x[r * D + j] - mean) / std::sqrt(var + eps);
      if (!weight.empty()) v *= weight[j];
      if (!bias.empty()) v += bias[j];
      y[r * D + j] = v;
    }
  }
  return y;
}

// RMS normalisation of each row of x [R, D]; empty weight means 1.
inline std::vector<double> rms_norm(const std::vector<double>& x, std::int64_t D, const std::vector<double>& weight, double eps) {
  std::vector<double> y(x.size());
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / D;
  for (std::int64_t r = 0; r < R; ++r) {
    double ms = 0;
    for (std::int64_t j = 0; j < D; ++j) ms += x[r * D + j] * x[r * D + j];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(D) + eps);
    for (std::int64_t j = 0; j < D; ++j) y[r * D + j] = x[r * D + j] * inv * (weight.empty() ? 1.0 : weight[j]);
  }
  return y;
}

// Group normalisation of x [N, C, S] with G groups of C / G channels; empty
// weight / bias (per channel) mean 1 / 0.
inline std::vector<double> group_norm(const std::vector<double>& x, std::int64_t N, std::int64_t C, std::int64_t S, std::int64_t G,
                                      const std::vector<double>& weight, const std::vector<double>& bias, double eps) {
  std::vector<double> y(x.size());
  const std::int64_t cg = C / G;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < G; ++g) {
      double mean = 0, var = 0;
      for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (std::int64_t s = 0; s < S; ++s) mean += x[(n * C + c) * S + s];
      mean /= static_cast<double>(cg * S);
      for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (std::int64_t s = 0; s < S; ++s) var += (x[(n * C + c) * S + s] - mean) * (x[(n * C + c) * S + s] - mean);
      var /= static_cast<double>(cg * S);
      for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (std::int64_t s = 0; s < S; ++s) {
          const std::int64_t i = (n * C + c) * S + s;
          y[i] = (x[i] - mean) / std::sqrt(var + eps) * (weight.empty() ? 1.0 : weight[c]) + (bias.empty() ? 0.0 : bias[c]);
        }
    }
  return y;
}

// Rotary position embedding of x [R, S, D] (half-split pairs (i, i + D / 2)),
// position offset + s, frequency base^(-2i / D).
inline std::vector<double> rope(const std::vector<double>& x, std::int64_t S, std::int64_t D, std::int64_t offset, double base) {
  std::vector<double> y(x.size());
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / (S * D), h = D / 2;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t i = 0; i < h; ++i) {
        const double angle = static_cast<double>(offset + s) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
        const std::int64_t a = (r * S + s) * D + i, b = a + h;
        y[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
        y[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
      }
  return y;
}

struct NormGradients {
  std::vector<double> dx, dweight, dbias;
};

// Gradients of layer_norm (x [R, D]; empty weight means 1) for the output
// gradient dy: with xhat = (x - mean) / sqrt(var + eps) and g = dy * weight,
//   dx = (g - mean_j(g) - xhat * mean_j(g * xhat)) / sqrt(var + eps),
// dweight = sum over rows of dy * xhat, dbias = sum over rows of dy.
inline NormGradients layer_norm_backward(const std::vector<double>& x, std::int64_t D, const std::vector<double>& weight,
                                         const std::vector<double>& dy, double eps) {
  NormGradients out{std::vector<double>(x.size()), std::vector<double>(D, 0.0), std::vector<double>(D, 0.0)};
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / D;
  std::vector<double> xhat(D), g(D);
  for (std::int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < D; ++j) mean += x[r * D + j];
    mean /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) var += (x[r * D + j] - mean) * (x[r * D + j] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(D) + eps);
    double mg = 0, mgx = 0;
    for (std::int64_t j = 0; j < D; ++j) {
      xhat[j] = (x[r * D + j] - mean) * rstd;
      g[j] = dy[r * D + j] * (weight.empty() ? 1.0 : weight[j]);
      mg += g[j] / static_cast<double>(D);
      mgx += g[j] * xhat[j] / static_cast<double>(D);
      out.dweight[j] += dy[r * D + j] * xhat[j];
      out.dbias[j] += dy[r * D + j];
    }
    for (std::int64_t j = 0; j < D; ++j) out.dx[r * D + j] = rstd * (g[j] - mg - xhat[j] * mgx);
  }
  return out;
}

// Gradients of rms_norm (x [R, D]; empty weight means 1) for the output
// gradient dy: with rstd = 1 / sqrt(mean_j(x^2) + eps), xhat = x * rstd and
// g = dy * weight,
//   dx = rstd * (g - xhat * mean_j(g * xhat)),
// dweight = sum over rows of dy * xhat (dbias is empty).
inline NormGradients rms_norm_backward(const std::vector<double>& x, std::int64_t D, const std::vector<double>& weight,
                                       const std::vector<double>& dy, double eps) {
  NormGradients out{std::vector<double>(x.size()), std::vector<double>(D, 0.0), {}};
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / D;
  for (std::int64_t r = 0; r < R; ++r) {
    double ms = 0, mgx = 0;
    for (std::int64_t j = 0; j < D; ++j) ms += x[r * D + j] * x[r * D + j] / static_cast<double>(D);
    const double rstd = 1 / std::sqrt(ms + eps);
    for (std::int64_t j = 0; j < D; ++j) {
      const double xhat = x[r * D + j] * rstd;
      mgx += dy[r * D + j] * (weight.empty() ? 1.0 : weight[j]) * xhat / static_cast<double>(D);
      out.dweight[j] += dy[r * D + j] * xhat;
    }
    for (std::int64_t j = 0; j < D; ++j)
      out.dx[r * D + j] = rstd * (dy[r * D + j] * (weight.empty() ? 1.0 : weight[j]) - x[r * D + j] * rstd * mgx);
  }
  return out;
}

// Batch normalisation of x [N, C, H * W = S]. In training the batch mean and
// biased variance normalise, and running_mean / running_var (if given) are
// updated with the unbiased variance; otherwise the running statistics normalise.
inline std::vector<double> batch_norm_2d(const std::vector<double>& x, std::int64_t N, std::int64_t C, std::int64_t S,
                                         const std::vector<double>& weight, const std::vector<double>& bias,
                                         std::vector<double>* running_mean, std::vector<double>* running_var, bool training,
                                         double momentum, double eps) {
  std::vector<double> mean(C), var(C), y(x.size());
  const double M = static_cast<double>(N * S);
  for (std::int64_t c = 0; c < C; ++c) {
    if (training) {
      double m = 0, v = 0;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t s = 0; s < S; ++s) m += x[(n * C + c) * S + s];
      m /= M;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t s = 0; s < S; ++s) v += (x[(n * C + c) * S + s] - m) * (x[(n * C + c) * S + s] - m);
      mean[c] = m;
      var[c] = v / M;
      if (running_mean) (*running_mean)[c] = (1 - momentum) * (*running_mean)[c] + momentum * m;
      if (running_var) (*running_var)[c] = (1 - momentum) * (*running_var)[c] + momentum * v / (M - 1);
    } else {
      mean[c] = (*running_mean)[c];
      var[c] = (*running_var)[c];
    }
  }
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t s = 0; s < S; ++s) {
        const std::int64_t i = (n * C + c) * S + s;
        double v = (x[i] - mean[c]) / std::sqrt(var[c] + eps);
        if (!weight.empty()) v *= weight[c];
        if (!bias.empty()) v += bias[c];
        y[i] = v;
      }
  return y;
}

// Gradients of batch_norm_2d in training (batch statistics; x [N, C, S],
// empty weight means 1): per channel, over its M = N * S values,
//   dx = weight (dy - mean(dy) - xhat * mean(dy * xhat)) / sqrt(var + eps),
// dweight = sum(dy * xhat), dbias = sum(dy).
inline NormGradients batch_norm_2d_backward(const std::vector<double>& x, std::int64_t N, std::int64_t C, std::int64_t S,
                                            const std::vector<double>& weight, const std::vector<double>& dy, double eps) {
  NormGradients out{std::vector<double>(x.size()), std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
  const double M = static_cast<double>(N * S);
  for (std::int64_t c = 0; c < C; ++c) {
    auto at = [&](std::int64_t n, std::int64_t s) { return (n * C + c) * S + s; };
    double mean = 0, var = 0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) mean += x[at(n, s)];
    mean /= M;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) var += (x[at(n, s)] - mean) * (x[at(n, s)] - mean);
    const double rstd = 1 / std::sqrt(var / M + eps), w = weight.empty() ? 1.0 : weight[c];
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) {
        out.dweight[c] += dy[at(n, s)] * (x[at(n, s)] - mean) * rstd;
        out.dbias[c] += dy[at(n, s)];
      }
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) {
        const double xhat = (x[at(n, s)] - mean) * rstd;
        out.dx[at(n, s)] = w * rstd * (dy[at(n, s)] - out.dbias[c] / M - xhat * out.dweight[c] / M);
      }
  }
  return out;
}

struct PoolShape {
  std::int64_t N, C, H, W;
  std::array<std::int64_t, 2> kernel, stride, padding;
  std::int64_t OH() const { return (H + 2 * padding[0] - kernel[0]) / stride[0] + 1; }
  std::int64_t OW() const { return (W + 2 * padding[1] - kernel[1]) / stride[1] + 1; }
};

// Max (padding is -inf; NaN wins) or average (padding counts as zeros; divisor
// kernel_h * kernel_w) pooling of x [N, C, H, W].
inline std::vector<double> pool_2d(const std::vector<double>& x, const PoolShape& p, bool max) {
  const std::int64_t OH = p.OH(), OW = p.OW();
  std::vector<double> y(static_cast<std::size_t>(p.N * p.C * OH * OW));
  for (std::int64_t plane = 0; plane < p.N * p.C; ++plane)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double acc = max ? kNegInf : 0.0;
        for (std::int64_t kh = 0; kh < p.kernel[0]; ++kh)
          for (std::int64_t kw = 0; kw < p.kernel[1]; ++kw) {
            const std::int64_t ih = oh * p.stride[0] - p.padding[0] + kh, iw = ow * p.stride[1] - p.padding[1] + kw;
            if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
            const double v = x[(plane * p.H + ih) * p.W + iw];
            if (max) acc = std::isnan(v) || std::isnan(acc) ? kNaN : std::max(acc, v);
            else acc += v;
          }
        y[(plane * OH + oh) * OW + ow] = max ? acc : acc / static_cast<double>(p.kernel[0] * p.kernel[1]);
      }
  return y;
}

// Mean over the H * W plane of x [N, C, H, W] -> [N, C].
inline std::vector<double> global_avg_pool_2d(const std::vector<double>& x, std::int64_t planes, std::int64_t area) {
  std::vector<double> y(static_cast<std::size_t>(planes), 0.0);
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t i = 0; i < area; ++i) y[p] += x[p * area + i];
    y[p] /= static_cast<double>(area);
  }
  return y;
}

// Rows of weight [V, D] selected by indices; out-of-range indices give zero rows.
inline std::vector<double> embedding(const std::vector<std::int32_t>& indices, const std::vector<double>& weight, std::int64_t V,
                                     std::int64_t D) {
  std::vector<double> y(indices.size() * static_cast<std::size_t>(D), 0.0);
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] >= 0 && indices[i] < V)
      for (std::int64_t d = 0; d < D; ++d) y[i * D + d] = weight[indices[i] * D + d];
  return y;
}

// Philox-4x32-10 (Salmon, Moraes, Dror and Shaw, SC'11): ten rounds of
//   (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)),
// M0 = 0xD2511F53, M1 = 0xCD9E8D57, with the key bumped by the Weyl constants
// (0x9E3779B9, 0xBB67AE85) after each round.
inline std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c[0], p1 = std::uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<std::uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// oa's uniform stream: element i is the top 24 bits of word i % 4 of the
// block for counter (i / 4, 0, 0, 0) under the 64-bit seed, scaled to [0, 1).
inline double philox_uniform(std::uint64_t i, std::uint64_t seed) {
  const auto block = philox4x32_10({static_cast<std::uint32_t>(i / 4), 0, 0, 0}, static_cast<std::uint32_t>(seed),
                                   static_cast<std::uint32_t>(seed >> 32));
  return static_cast<double>(block[i % 4] >> 8) / 16777216.0;
}

// Inverted dropout with oa's mask: element i survives when its uniform is >= p.
inline std::vector<double> dropout(const std::vector<double>& x, double p, std::uint64_t seed) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = philox_uniform(i, seed) >= p ? x[i] / (1 - p) : 0.0;
  return y;
}

// log(softmax) of each row of x [R, L]; an all -inf row gives -inf.
inline std::vector<double> log_softmax(const std::vector<double>& x, std::int64_t L) {
  std::vector<double> y(x.size());
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / L;
  for (std::int64_t r = 0; r < R; ++r) {
    double m = kNegInf;
    for (std::int64_t j = 0; j < L; ++j) m = nan_max(m, x[r * L + j]);
    double s = 0;
    if (m != kNegInf)
      for (std::int64_t j = 0; j < L; ++j) s += std::exp(x[r * L + j] - m);
    for (std::int64_t j = 0; j < L; ++j) y[r * L + j] = m == kNegInf ? kNegInf : x[r * L + j] - m - std::log(s);
  }
  return y;
}

// Gradient of log_softmax for the output gradient dy: per row
// dx = dy - softmax(x) * sum(dy); a row whose every element is -inf gets 0.
inline std::vector<double> log_softmax_backward(const std::vector<double>& x, const std::vector<double>& dy, std::int64_t L) {
  const std::vector<double> y = log_softmax(x, L);
  std::vector<double> dx(x.size());
  const std::int64_t R = static_cast<std::int64_t>(x.size()) / L;
  for (std::int64_t r = 0; r < R; ++r) {
    double s = 0;
    bool masked = true;
    for (std::int64_t j = 0; j < L; ++j) {
      s += dy[r * L + j];
      masked = masked && x[r * L + j] == kNegInf;
    }
    for (std::int64_t j = 0; j < L; ++j) dx[r * L + j] = masked ? 0.0 : dy[r * L + j] - std::exp(y[r * L + j]) * s;
  }
  return dx;
}

enum class LossReduction { None, Mean, Sum };

// Cross entropy of logits [N, C] against class targets: per row
// -sum_j q_j log_softmax(x)_j with q = (1 - s) onehot(t) + s / C; ignored rows
// give 0 and are not counted by the mean.
inline std::vector<double> cross_entropy(const std::vector<double>& logits, const std::vector<std::int32_t>& targets, std::int64_t C,
                                         LossReduction reduction, std::int64_t ignore_index, double smoothing) {
  const std::vector<double> lp = log_softmax(logits, C);
  std::vector<double> loss(targets.size(), 0.0);
  double total = 0, counted = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == ignore_index) continue;
    double l = 0;
    for (std::int64_t j = 0; j < C; ++j) {
      const double q = (j == targets[i] ? 1 - smoothing : 0.0) + smoothing / static_cast<double>(C);
      if (q != 0) l -= q * lp[i * C + j];
    }
    loss[i] = l;
    total += l;
    counted += 1;
  }
  if (reduction == LossReduction::None) return loss;
  return {reduction == LossReduction::Sum ? total : total / counted};
}

// Logit gradient of cross_entropy for the output gradient dy ([N] for
// None, one value otherwise): row i gets g_i (softmax(x_i) - q_i), g_i = 0
// for an ignored row and otherwise dy[i] (None), dy[0] (Sum) or dy[0] over
// the number of rows not ignored (Mean).
inline std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<std::int32_t>& targets,
                                                  std::int64_t C, LossReduction reduction, std::int64_t ignore_index, double smoothing,
                                                  const std::vector<double>& dy) {
  const std::vector<double> lp = log_softmax(logits, C);
  double counted = 0;
  for (std::int32_t t : targets) counted += t == ignore_index ? 0 : 1;
  std::vector<double> dx(logits.size(), 0.0);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == ignore_index) continue;
    const double g = reduction == LossReduction::None ? dy[i] : reduction == LossReduction::Sum ? dy[0] : dy[0] / counted;
    for (std::int64_t j = 0; j < C; ++j) {
      const double q = (j == targets[i] ? 1 - smoothing : 0.0) + smoothing / static_cast<double>(C);
      dx[i * C + j] = g * (std::exp(lp[i * C + j]) - q);
    }
  }
  return dx;
}

inline std::vector<double> mse_loss(const std::vector<double>& a, const std::vector<double>& b, LossReduction reduction) {
  std::vector<double> sq(a.size());
  double total = 0;
  for (std::size_t i = 0; i < a.size(); ++i) total += sq[i] = (a[i] - b[i]) * (a[i] - b[i]);
  if (reduction == LossReduction::None) return sq;
  return {reduction == LossReduction::Sum ? total : total / static_cast<double>(a.size())};
}

// Fraction of rows whose first maximum is at the target.
inline double accuracy(const std::vector<double>& logits, const std::vector<std::int32_t>& targets, std::int64_t C) {
  double hits = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < C; ++j)
      if (logits[i * C + j] > logits[i * C + best]) best = j;
    hits += best == targets[i] ? 1 : 0;
  }
  return hits / static_cast<double>(targets.size());
}

}  // namespace oa::reference
