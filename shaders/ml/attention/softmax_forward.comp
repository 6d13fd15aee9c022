#version 450
// y = softmax(x * scale + mask) over each row of `cols` columns, with optional
// causal hiding for attention scores: row R = row_base + r of [BH, Sq, Sk] is
// query i = R % sq of batch-head bh = R / sq and sees columns
// c <= i + diag (Sk - Sq aligned bottom-right, 0 top-left). The logit is fma(x, scale, mask) (one rounding); the mask
// element of (bh, i, c) is (bh / mask_heads) * mask_sb + (bh % mask_heads) *
// mask_sh + i * mask_sq + c (strides of 0 broadcast). Per row: its max m and
// l = sum(exp(v - m)), then y = exp(v - m) / l. Each invocation keeps its
// first SLOTS slots of 4 columns in registers (common/row_slots.glsl); the
// columns past them are folded by online softmax in the same pass and read
// again to be written, so a row is read once up to 4 * SLOTS * LANES columns
// and its tail twice. A row with nothing visible (max = -inf) is written as
// zeros; a NaN logit makes its whole row NaN, hidden columns included (the
// row max is NaN: common/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { vec4 y4[]; };

#include "ml/attention/softmax_forward.push.h"
#include "common/rows.glsl"
#include "common/row_slots.glsl"

// The logits of slot n of the row at x[base]: -inf from column `visible` on;
// mask_at is the row's first mask element.
vec4 logits(uint base, uint n, uint visible, uint mask_at) {
  vec4 v = slot_load(base, n, visible, 0.0);
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint c = slot_column(n, j);
    v[j] = c >= visible ? -OA_INF : pc.masked != 0u ? fma(v[j], pc.scale, mask[mask_at + c]) : v[j] * pc.scale;
  }
  return v;
}

void store(uint base, uint n, vec4 v) {
  if (ALIGNED) {
    if (slot_column(n, 0u) < pc.cols) y4[(base + slot_column(n, 0u)) / 4u] = v;
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (slot_column(n, j) < pc.cols) y[base + slot_column(n, j)] = v[j];
  }
}

void main() {
  const uint row = rows_row();
  const bool live = row < pc.rows;
  const uint base = row * pc.cols;
  uint visible = live ? pc.cols : 0u;
  const uint bh = (pc.row_base + row) / pc.sq, query = pc.row_base + row - bh * pc.sq;
  const uint mb = bh / pc.mask_heads;
  const uint mask_at = pc.masked != 0u ? mb * pc.mask_sb + (bh - mb * pc.mask_heads) * pc.mask_sh + query * pc.mask_sq : 0u;
  if (live && pc.causal != 0u) visible = uint(clamp(int(query) + pc.diag + 1, 0, int(pc.cols)));

  vec4 cache[SLOTS];
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) cache[n] = logits(base, n, visible, mask_at);
  float m = -OA_INF, s = 0.0;  // s: the tail's sum at m
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) m = oa_max(m, oa_max4(cache[n]));
  for (uint n = SLOTS; slot_live(n, visible); n += 4u) {  // 4 slots' loads in flight
    vec4 v[4];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) v[k] = logits(base, n + k, visible, mask_at);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) online_fold(m, s, v[k]);
  }

  const float row_max = rows_max(m), shift = online_shift(row_max);
  s = online_rescale(m, s, row_max);
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) {
    cache[n] = exp(cache[n] - shift);
    s += (cache[n].x + cache[n].y) + (cache[n].z + cache[n].w);
  }
  const float l = rows_sum(s);
  const float inv = l == 0.0 ? 0.0 : 1.0 / l;  // NaN l: the whole row NaN

  if (!live) return;
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) store(base, n, cache[n] * inv);
  for (uint n = SLOTS; slot_live(n, pc.cols); n += 4u) {
    vec4 v[4];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) v[k] = logits(base, n + k, visible, mask_at);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) store(base, n + k, exp(v[k] - shift) * inv);
  }
}
