#version 450
// y = softmax(x * scale + mask) over each row of `cols` columns, with optional
// causal hiding for attention scores: row R = row_base + r of [BH, Sq, Sk] is
// query i = R % sq of batch-head bh = R / sq and sees columns
// c <= i + diag (Sk - Sq aligned bottom-right, 0 top-left). The logit is fma(x, scale, mask) (one rounding); the mask
// element of (bh, i, c) is (bh / mask_heads) * mask_sb + (bh % mask_heads) *
// mask_sh + i * mask_sq + c (strides of 0 broadcast). Three steps per row:
// max, sum of exp(v - max), write exp(v - max) / sum. A row with nothing
// visible (max = -inf) is written as zeros; a NaN logit makes its whole row
// NaN, hidden columns included (the row max is NaN: common/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

#include "ml/attention/softmax_forward.push.h"
#include "ml/attention/softmax_common.glsl"

// mask_at: the row's first mask element.
float logit(uint row, uint c, uint mask_at) {
  const float v = x[row * pc.cols + c];
  return pc.masked != 0u ? fma(v, pc.scale, mask[mask_at + c]) : v * pc.scale;
}

void main() {
  const uint lane = rows_lane(), row = rows_row();
  const bool live = row < pc.rows;
  uint visible = live ? pc.cols : 0u;
  const uint bh = (pc.row_base + row) / pc.sq, query = pc.row_base + row - bh * pc.sq;
  const uint mb = bh / pc.mask_heads;
  const uint mask_at = pc.masked != 0u ? mb * pc.mask_sb + (bh - mb * pc.mask_heads) * pc.mask_sh + query * pc.mask_sq : 0u;
  if (live && pc.causal != 0u) visible = uint(clamp(int(query) + pc.diag + 1, 0, int(pc.cols)));

  // The first CACHE columns of this invocation stay in registers (fixed
  // indices after unrolling); columns past LANES * CACHE are re-read.
  const uint tail = lane + CACHE * LANES;
  float cache[CACHE];
  float m = -OA_INF;
  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * LANES;
    cache[n] = c < visible ? logit(row, c, mask_at) : -OA_INF;
    m = oa_max(m, cache[n]);
  }
  for (uint c = tail; c < visible; c += LANES) m = oa_max(m, logit(row, c, mask_at));
  m = rows_max(m);
  const float m_use = m == -OA_INF ? 0.0 : m;

  float l = 0.0;
  for (uint n = 0u; n < CACHE; ++n) {
    cache[n] = exp(cache[n] - m_use);
    l += cache[n];
  }
  for (uint c = tail; c < visible; c += LANES) l += exp(logit(row, c, mask_at) - m_use);
  l = rows_sum(l);
  const float inv = l == 0.0 ? 0.0 : 1.0 / l;  // NaN l: the whole row NaN

  if (!live) return;
  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * LANES;
    if (c < pc.cols) y[row * pc.cols + c] = cache[n] * inv;
  }
  for (uint c = tail; c < pc.cols; c += LANES) y[row * pc.cols + c] = (c < visible ? exp(logit(row, c, mask_at) - m_use) : 0.0) * inv;
}
