#pragma once
// f64 references for the attention modules, composed from the definitions:
// multi-head self-attention (the fused projection, the attention reference
// per head, the output projection) and the pre-norm Transformer block.
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/attention.hpp"
#include "reference/elementwise.hpp"
#include "reference/linear.hpp"
#include "reference/nn.hpp"

namespace oa::reference {

// Multi-head self-attention on x [B, S, D] (H heads) with the fused
// projection qkv (w_qkv [3D, D], b_qkv [3D]: q, k, v in that order) and the
// output projection (w_o [D, D], b_o [D]). With dropout > 0 the attention
// probabilities [B*H, S, S] go through oa's dropout (reference/nn.hpp) with
// `seed` before they weight v.
inline Vec multi_head_attention(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, bool causal,
                                const Vec& w_qkv, const Vec& b_qkv, const Vec& w_o, const Vec& b_o, double dropout_p = 0.0,
                                std::uint64_t seed = 0) {
  const std::int64_t rows = batch * seq, dh = d / heads;
  const Vec qkv = linear(x, w_qkv, b_qkv, rows, d, 3 * d);
  Vec part[3];
  for (int p = 0; p < 3; ++p) {
    part[p].resize(static_cast<std::size_t>(rows * d));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t i = 0; i < d; ++i)
        part[p][static_cast<std::size_t>(r * d + i)] = qkv[static_cast<std::size_t>(r * 3 * d + p * d + i)];
  }
  AttentionProblem problem;
  problem.bh = batch * heads;
  problem.sq = problem.sk = seq;
  problem.dh = problem.dv = dh;
  problem.scale = 1.0 / std::sqrt(static_cast<double>(dh));
  problem.causal = causal;
  const Vec v = split_heads(part[2], batch, seq, heads, dh);
  const AttentionResult a = attention(problem, split_heads(part[0], batch, seq, heads, dh), split_heads(part[1], batch, seq, heads, dh), v);
  const Vec o = dropout_p > 0 ? bmm(dropout(a.probs, dropout_p, seed), v, batch * heads, seq, seq, dh, false, false) : a.out;
  Vec merged(o.size());  // [B*H, S, Dh] -> [B*S, H*Dh]
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t s = 0; s < seq; ++s)
        for (std::int64_t i = 0; i < dh; ++i)
          merged[static_cast<std::size_t>((b * seq + s) * d + h * dh + i)] = o[static_cast<std::size_t>(((b * heads + h) * seq + s) * dh + i)];
  return linear(merged, w_o, b_o, rows, d, d);
}

// Parameters of a pre-norm Transformer block in its named_parameters() order.
struct BlockParams {
  Vec norm1_w, norm1_b, qkv_w, qkv_b, proj_w, proj_b, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

// x + MHA(LN1(x)), then h + fc2(gelu(fc1(LN2(h)))), on x [B, S, D].
inline Vec transformer_block(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, bool causal,
                             const BlockParams& p) {
  const std::int64_t rows = batch * seq;
  const Vec a = multi_head_attention(layer_norm(x, d, p.norm1_w, p.norm1_b, 1e-5), batch, seq, d, heads, causal, p.qkv_w,
                                     p.qkv_b, p.proj_w, p.proj_b);
  Vec h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = x[i] + a[i];
  Vec f = linear(layer_norm(h, d, p.norm2_w, p.norm2_b, 1e-5), p.fc1_w, p.fc1_b, rows, d, 4 * d);
  for (double& v : f) v = ::ref::gelu(v);
  const Vec m = linear(f, p.fc2_w, p.fc2_b, rows, 4 * d, d);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += m[i];
  return h;
}

}  // namespace oa::reference
