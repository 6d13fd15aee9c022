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

// Multi-head attention of query [B, Sq, D] over key [B, Sk, kdim] and value
// [B, Sk, vdim] (H heads) with separate projections w_q [D, D], w_k
// [D, kdim], w_v [D, vdim] and b_qkv [3D] (q, k, v in that order; or empty), then the
// output projection (w_o [D, D], b_o [D]). mask: empty, or additive
// [B*H*Sq, Sk]. With dropout > 0 the attention probabilities [B*H, Sq, Sk]
// go through oa's dropout (reference/nn.hpp) with `seed` before they weight v.
inline Vec multi_head_attention(const Vec& query, const Vec& key, const Vec& value, std::int64_t batch, std::int64_t sq, std::int64_t sk,
                                std::int64_t d, std::int64_t kdim, std::int64_t vdim, std::int64_t heads, bool causal, const Vec& mask,
                                const Vec& w_q, const Vec& w_k, const Vec& w_v, const Vec& b_qkv, const Vec& w_o, const Vec& b_o,
                                double dropout_p = 0.0, std::uint64_t seed = 0) {
  const std::int64_t dh = d / heads;
  // Part p (0: q, 1: k, 2: v) of the projection of x [B, seq, in], as heads [B*H, seq, Dh].
  auto project = [&](const Vec& x, const Vec& w, std::int64_t seq, std::int64_t in, std::int64_t p) {
    const Vec b = b_qkv.empty() ? Vec() : Vec(b_qkv.begin() + p * d, b_qkv.begin() + (p + 1) * d);
    return split_heads(linear(x, w, b, batch * seq, in, d), batch, seq, heads, dh);
  };
  AttentionProblem problem;
  problem.bh = batch * heads;
  problem.sq = sq;
  problem.sk = sk;
  problem.dh = problem.dv = dh;
  problem.scale = 1.0 / std::sqrt(static_cast<double>(dh));
  problem.causal = causal;
  problem.mask = mask;
  problem.mask_rows = batch * heads * sq;
  const Vec v = project(value, w_v, sk, vdim, 2);
  const AttentionResult a = attention(problem, project(query, w_q, sq, d, 0), project(key, w_k, sk, kdim, 1), v);
  const Vec o = dropout_p > 0 ? bmm(dropout(a.probs, dropout_p, seed), v, batch * heads, sq, sk, dh, false, false) : a.out;
  Vec merged(o.size());  // [B*H, Sq, Dh] -> [B*Sq, H*Dh]
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t s = 0; s < sq; ++s)
        for (std::int64_t i = 0; i < dh; ++i)
          merged[static_cast<std::size_t>((b * sq + s) * d + h * dh + i)] = o[static_cast<std::size_t>(((b * heads + h) * sq + s) * dh + i)];
  return linear(merged, w_o, b_o, batch * sq, d, d);
}

// The above with key and value [B, Sk, D] and the fused projection qkv
// (w_qkv [3D, D], b_qkv [3D]: rows for q, k, v in that order).
inline Vec multi_head_attention(const Vec& query, const Vec& key, const Vec& value, std::int64_t batch, std::int64_t sq, std::int64_t sk,
                                std::int64_t d, std::int64_t heads, bool causal, const Vec& mask, const Vec& w_qkv, const Vec& b_qkv,
                                const Vec& w_o, const Vec& b_o, double dropout_p = 0.0, std::uint64_t seed = 0) {
  const auto part = [&](std::int64_t p) { return Vec(w_qkv.begin() + p * d * d, w_qkv.begin() + (p + 1) * d * d); };
  return multi_head_attention(query, key, value, batch, sq, sk, d, d, d, heads, causal, mask, part(0), part(1), part(2), b_qkv, w_o, b_o,
                              dropout_p, seed);
}

// Multi-head self-attention on x [B, S, D]: the above with query = key = value = x and no mask.
inline Vec multi_head_attention(const Vec& x, std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, bool causal,
                                const Vec& w_qkv, const Vec& b_qkv, const Vec& w_o, const Vec& b_o, double dropout_p = 0.0,
                                std::uint64_t seed = 0) {
  return multi_head_attention(x, x, x, batch, seq, seq, d, heads, causal, {}, w_qkv, b_qkv, w_o, b_o, dropout_p, seed);
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
