#version 450
// y = softmax(x * scale + mask) over each row of `cols` columns, with optional
// causal hiding for attention scores: row r of [BH, Sq, Sk] is query
// (row_base + r) % sq and sees columns c <= query + sk - sq. Three steps per
// row: max, sum of exp(v - max), write exp(v - max) / sum; a row with nothing
// visible (max = -inf) is written as zeros.
// mask_mode: 0 none, 1 one mask row per row (bound like x), 2 mask row
// (row_base + r) % mask_period of a broadcast mask.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/attention/softmax_common.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

OA_PUSH_BEGIN uint rows; uint cols; float scale; uint mask_mode; uint mask_period; uint row_base; uint causal; uint sq; uint sk; OA_PUSH_END

float logit(uint row, uint c) {
  float v = x[row * pc.cols + c] * pc.scale;
  if (pc.mask_mode == 1u) v += mask[row * pc.cols + c];
  else if (pc.mask_mode == 2u) v += mask[((pc.row_base + row) % pc.mask_period) * pc.cols + c];
  return v;
}

void main() {
  const uint lane = gl_LocalInvocationID.x % ROW_LANES;
  const uint row = OA_GROUP_ID.x * ROWS_PER_GROUP + gl_LocalInvocationID.x / ROW_LANES;
  const bool live = row < pc.rows;
  uint visible = live ? pc.cols : 0u;
  if (live && pc.causal != 0u) {
    const int query = int((pc.row_base + row) % pc.sq);
    visible = uint(clamp(query + int(pc.sk) - int(pc.sq) + 1, 0, int(pc.cols)));
  }

  // The first CACHE columns of this invocation stay in registers (fixed
  // indices after unrolling); columns past ROW_LANES * CACHE are re-read.
  const uint tail = lane + CACHE * ROW_LANES;
  float cache[CACHE];
  float m = -OA_INF;
  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * ROW_LANES;
    cache[n] = c < visible ? logit(row, c) : -OA_INF;
    m = max(m, cache[n]);
  }
  for (uint c = tail; c < visible; c += ROW_LANES) m = max(m, logit(row, c));
  m = row_reduce(m, 0u);
  const float m_use = m == -OA_INF ? 0.0 : m;

  float l = 0.0;
  for (uint n = 0u; n < CACHE; ++n) {
    cache[n] = exp(cache[n] - m_use);
    l += cache[n];
  }
  for (uint c = tail; c < visible; c += ROW_LANES) l += exp(logit(row, c) - m_use);
  l = row_reduce(l, 1u);
  const float inv = l > 0.0 ? 1.0 / l : 0.0;

  if (!live) return;
  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * ROW_LANES;
    if (c < pc.cols) y[row * pc.cols + c] = cache[n] * inv;
  }
  for (uint c = tail; c < pc.cols; c += ROW_LANES) y[row * pc.cols + c] = c < visible ? exp(logit(row, c) - m_use) * inv : 0.0;
}
