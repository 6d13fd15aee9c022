#pragma once
// Plain f64 host oracles for the attention family, written from the math:
// batched products, head permutations, masked softmax, attention forward and
// its analytic gradients (through the full probability matrix). All take and
// return f64 so that finite differences (tests/support/gradcheck.hpp) can use
// them with tiny steps.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference/constants.hpp"

namespace oa::reference {

using Vec = std::vector<double>;

// C[t] = op(A[t]) op(B[t]) with op(A) [M, K] and op(B) [K, P]; A is stored
// [M, K] or, when trans_a, [K, M]; B is stored [K, P] or, when trans_b, [P, K].
inline Vec bmm(const Vec& a, const Vec& b, std::int64_t n, std::int64_t m, std::int64_t k, std::int64_t p, bool trans_a,
               bool trans_b) {
  Vec c(static_cast<std::size_t>(n * m * p), 0.0);
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < p; ++j) {
        double acc = 0.0;
        for (std::int64_t x = 0; x < k; ++x)
          acc += a[static_cast<std::size_t>(trans_a ? (t * k + x) * m + i : (t * m + i) * k + x)] *
                 b[static_cast<std::size_t>(trans_b ? (t * p + j) * k + x : (t * k + x) * p + j)];
        c[static_cast<std::size_t>((t * m + i) * p + j)] = acc;
      }
  return c;
}

// x between the merged layout [B*S, H*Dh] and the split one [B*H, S, Dh]:
// merged to split when `split`, else split to merged.
inline Vec permute_heads(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dh, bool split) {
  Vec y(x.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t s = 0; s < seq; ++s)
        for (std::int64_t d = 0; d < dh; ++d) {
          const auto merged = static_cast<std::size_t>((b * seq + s) * heads * dh + h * dh + d);
          const auto separate = static_cast<std::size_t>(((b * heads + h) * seq + s) * dh + d);
          if (split) y[separate] = x[merged];
          else y[merged] = x[separate];
        }
  return y;
}

// [B*S, H*Dh] -> [B*H, S, Dh].
inline Vec split_heads(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dh) {
  return permute_heads(x, batch, seq, heads, dh, true);
}

// [B*H, S, Dh] -> [B*S, H*Dh] (the inverse of split_heads).
inline Vec merge_heads(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dh) {
  return permute_heads(x, batch, seq, heads, dh, false);
}

// Part `part` (0: q, 1: k, 2: v) of a fused projection [B*S, 3*H*Dh] as
// heads [B*H, S, Dh]: element (b*H + h, s, d) is qkv[b*S + s][part*H*Dh + h*Dh + d].
inline Vec split_qkv_heads(const Vec& qkv, std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dh, int part) {
  Vec y(qkv.size() / 3);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t s = 0; s < seq; ++s)
        for (std::int64_t d = 0; d < dh; ++d)
          y[static_cast<std::size_t>(((b * heads + h) * seq + s) * dh + d)] =
              qkv[static_cast<std::size_t>((b * seq + s) * 3 * heads * dh + part * heads * dh + h * dh + d)];
  return y;
}

// Row softmax of x * scale + mask over rows of `cols`; mask (may be empty) row
// r % mask_rows; when causal, row r is query r % sq and sees columns
// c <= query + cols - sq. Fully hidden rows are zero.
inline Vec softmax(const Vec& x, std::int64_t rows, std::int64_t cols, double scale, const Vec& mask = {},
                   std::int64_t mask_rows = 1, bool causal = false, std::int64_t sq = 1) {
  Vec y(x.size(), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    Vec logits(static_cast<std::size_t>(cols), kNegInf);
    double mx = kNegInf;
    for (std::int64_t c = 0; c < cols; ++c) {
      if (causal && c > r % sq + cols - sq) continue;
      double v = x[static_cast<std::size_t>(r * cols + c)] * scale;
      if (!mask.empty()) v += mask[static_cast<std::size_t>((r % mask_rows) * cols + c)];
      logits[static_cast<std::size_t>(c)] = v;
      mx = nan_max(mx, v);
    }
    if (mx == kNegInf) continue;
    double sum = 0.0;
    for (double v : logits) sum += std::exp(v - mx);
    for (std::int64_t c = 0; c < cols; ++c) y[static_cast<std::size_t>(r * cols + c)] = std::exp(logits[static_cast<std::size_t>(c)] - mx) / sum;
  }
  return y;
}

// dx = scale * y * (dy - rowsum(y * dy)).
inline Vec softmax_backward(const Vec& y, const Vec& dy, std::int64_t rows, std::int64_t cols, double scale) {
  Vec dx(y.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double dot = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) dot += y[static_cast<std::size_t>(r * cols + c)] * dy[static_cast<std::size_t>(r * cols + c)];
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(r * cols + c);
      dx[i] = scale * y[i] * (dy[i] - dot);
    }
  }
  return dx;
}

// x rounded to the nearest f32 value (ties to even), +-inf past the f32 range.
inline double round_to_f32(double x) {
  constexpr double kMax = std::numeric_limits<float>::max();
  const double half_ulp = std::ldexp(1.0, 103);  // half the spacing of f32 values at FLT_MAX
  if (std::fabs(x) >= kMax + half_ulp) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (std::fabs(x) > kMax) return std::copysign(kMax, x);
  return static_cast<double>(static_cast<float>(x));
}

// Attention problem: q [BH, Sq, Dh], k [BH, Sk, Dh], v [BH, Sk, Dv]; mask
// (may be empty) with mask_rows rows of Sk (BH*Sq, or Sq broadcast).
// f32_masked_logits: a masked logit is the f32 value nearest to
// score * scale + mask (oa's and PyTorch's f32 logits: a mask that dwarfs the
// score absorbs it, so a row masked by -FLT_MAX everywhere is uniform);
// otherwise logits are exact f64.
struct AttentionProblem {
  std::int64_t bh = 1, sq = 1, sk = 1, dh = 1, dv = 1;
  double scale = 1.0;
  bool causal = false;
  bool upper_left = false;  // causal: query i sees keys j <= i (else j <= i + Sk - Sq)
  Vec mask;
  std::int64_t mask_rows = 1;
  bool f32_masked_logits = false;
};

struct AttentionResult {
  Vec out;    // [BH, Sq, Dv]
  Vec lse;    // [BH, Sq], -inf for fully hidden rows
  Vec probs;  // [BH, Sq, Sk]
};

inline AttentionResult attention(const AttentionProblem& p, const Vec& q, const Vec& k, const Vec& v) {
  AttentionResult r;
  r.out.assign(static_cast<std::size_t>(p.bh * p.sq * p.dv), 0.0);
  r.lse.assign(static_cast<std::size_t>(p.bh * p.sq), kNegInf);
  r.probs.assign(static_cast<std::size_t>(p.bh * p.sq * p.sk), 0.0);
  for (std::int64_t b = 0; b < p.bh; ++b)
    for (std::int64_t i = 0; i < p.sq; ++i) {
      const std::int64_t row = b * p.sq + i;
      Vec s(static_cast<std::size_t>(p.sk), kNegInf);
      double mx = kNegInf;
      for (std::int64_t j = 0; j < p.sk; ++j) {
        if (p.causal && j > i + (p.upper_left ? 0 : p.sk - p.sq)) continue;
        double dot = 0.0;
        for (std::int64_t d = 0; d < p.dh; ++d)
          dot += q[static_cast<std::size_t>(row * p.dh + d)] * k[static_cast<std::size_t>((b * p.sk + j) * p.dh + d)];
        double val = dot * p.scale;
        if (!p.mask.empty()) {
          val += p.mask[static_cast<std::size_t>((row % p.mask_rows) * p.sk + j)];
          if (p.f32_masked_logits) val = round_to_f32(val);
        }
        s[static_cast<std::size_t>(j)] = val;
        mx = nan_max(mx, val);
      }
      if (mx == kNegInf) continue;
      double sum = 0.0;
      for (double val : s) sum += std::exp(val - mx);
      r.lse[static_cast<std::size_t>(row)] = mx + std::log(sum);
      for (std::int64_t j = 0; j < p.sk; ++j) {
        const double pr = std::exp(s[static_cast<std::size_t>(j)] - mx) / sum;
        r.probs[static_cast<std::size_t>(row * p.sk + j)] = pr;
        for (std::int64_t d = 0; d < p.dv; ++d)
          r.out[static_cast<std::size_t>(row * p.dv + d)] += pr * v[static_cast<std::size_t>((b * p.sk + j) * p.dv + d)];
      }
    }
  return r;
}

struct AttentionGrads {
  Vec dq, dk, dv;
};

// Gradients of sum(out * g): dv = P^T g, dP = g v^T, dS = P (dP - rowsum(P dP)),
// dq = scale dS k, dk = scale dS^T q.
inline AttentionGrads attention_backward(const AttentionProblem& p, const Vec& q, const Vec& k, const Vec& v, const Vec& g) {
  const AttentionResult f = attention(p, q, k, v);
  AttentionGrads r{Vec(q.size(), 0.0), Vec(k.size(), 0.0), Vec(v.size(), 0.0)};
  for (std::int64_t b = 0; b < p.bh; ++b)
    for (std::int64_t i = 0; i < p.sq; ++i) {
      const std::int64_t row = b * p.sq + i;
      Vec dp(static_cast<std::size_t>(p.sk), 0.0);
      double dot = 0.0;
      for (std::int64_t j = 0; j < p.sk; ++j) {
        const double pr = f.probs[static_cast<std::size_t>(row * p.sk + j)];
        for (std::int64_t d = 0; d < p.dv; ++d) {
          const double gv = g[static_cast<std::size_t>(row * p.dv + d)];
          dp[static_cast<std::size_t>(j)] += gv * v[static_cast<std::size_t>((b * p.sk + j) * p.dv + d)];
          r.dv[static_cast<std::size_t>((b * p.sk + j) * p.dv + d)] += pr * gv;
        }
        dot += pr * dp[static_cast<std::size_t>(j)];
      }
      for (std::int64_t j = 0; j < p.sk; ++j) {
        const double ds = f.probs[static_cast<std::size_t>(row * p.sk + j)] * (dp[static_cast<std::size_t>(j)] - dot) * p.scale;
        for (std::int64_t d = 0; d < p.dh; ++d) {
          r.dq[static_cast<std::size_t>(row * p.dh + d)] += ds * k[static_cast<std::size_t>((b * p.sk + j) * p.dh + d)];
          r.dk[static_cast<std::size_t>((b * p.sk + j) * p.dh + d)] += ds * q[static_cast<std::size_t>(row * p.dh + d)];
        }
      }
    }
  return r;
}

}  // namespace oa::reference
