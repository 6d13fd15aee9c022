#version 450
// Flash attention forward through GEMMs, the step between them, for one
// block of `queries` query rows (query0 ..) of each batch-head head0 ..
// against its first `cols` keys: turns raw scores s = q.k (times the sign of
// scale; `rows` rows of `cols` in `scores`, head-major) into probabilities
// p = exp2((s - m) u - log2 l) in place, and writes each row's lse and stats
// (m, log2 l), all as the fused forward defines them (flash_common.glsl), so
// that either backward can follow. Hidden keys (causal, -inf mask) get
// p = 0; a row with no visible key gets p = 0, lse = -inf and stats
// (-inf, -inf); a NaN logit makes its row NaN.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

layout(std430, binding = 0) buffer Scores { float scores[]; };
layout(std430, binding = 1) readonly buffer Mask { float mask[]; };
layout(std430, binding = 2) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 3) writeonly buffer Stats { vec2 stats_out[]; };

#include "ml/attention/flash_forward_scores.push.h"
#include "common/rows.glsl"
#include "ml/attention/flash_layout.glsl"

layout(constant_id = 1) const bool MASKED = false;
// Logits a lane keeps in registers: rows of at most HELD * LANES keys are
// read once (one read fewer than the fallback's two).
const uint HELD = 8u;

// The logit of key j of the row at `base` (mask row at `mask_at`).
float logit(uint base, uint mask_at, uint j, float scale_abs) {
  float t = scores[base + j];
  if (MASKED) t = fma(t, scale_abs, mask[mask_at + j]);
  return t;
}

// Folds logit t into a running max m and sum l = sum exp2((t - m) u).
void fold(inout float m, inout float l, float t, float u) {
  if (t == -OA_INF) return;
  const float m_new = oa_max(m, t);
  l = l * exp2((m - m_new) * u) + exp2((t - m_new) * u);
  m = m_new;
}

void main() {
  const uint lane = rows_lane(), r = rows_row();
  const bool live = r < pc.rows;
  const uint head = r / pc.queries;
  const uint bh = pc.head0 + head, i = pc.query0 + (r - head * pc.queries);
  const float scale_abs = abs(pc.scale);
  const float u = MASKED ? OA_LOG2E : scale_abs * OA_LOG2E;
  // Keys [0, end) are visible (before the mask).
  const int last = pc.causal != 0u ? int(i) + pc.diag : int(pc.cols) - 1;
  const uint end = live ? uint(clamp(last + 1, 0, int(pc.cols))) : 0u;
  const uint mask_at = MASKED && live ? flash_mask_row(bh, i, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;
  const uint base = r * pc.cols;
  const bool held = pc.cols <= HELD * LANES;

  // Each lane's running max and sum over its keys j = lane, lane + LANES, ...,
  // then the row's: m the largest logit, l = sum exp2((t - m) u).
  float m = -OA_INF, l = 0.0;
  float t_held[HELD];
  if (held) {
    [[unroll]] for (uint h = 0u; h < HELD; ++h) {
      const uint j = lane + h * LANES;
      t_held[h] = j < end ? logit(base, mask_at, j, scale_abs) : -OA_INF;
      fold(m, l, t_held[h], u);
    }
  } else {
    for (uint j = lane; j < end; j += LANES) fold(m, l, logit(base, mask_at, j, scale_abs), u);
  }
  const float row_m = rows_max(m);
  const float row_l = rows_sum(m == -OA_INF ? 0.0 : l * exp2((m - row_m) * u));
  if (!live) return;

  // p = exp2((t - m) u - log2 l) for visible keys, 0 elsewhere.
  const float log2_l = row_l == 0.0 ? -OA_INF : log2(row_l);
  const bool any = row_l != 0.0;
  if (held) {
    [[unroll]] for (uint h = 0u; h < HELD; ++h) {
      const uint j = lane + h * LANES;
      if (j < pc.cols) scores[base + j] = j < end && any ? exp2(fma(t_held[h] - row_m, u, -log2_l)) : 0.0;
    }
  } else {
    for (uint j = lane; j < pc.cols; j += LANES)
      scores[base + j] = j < end && any ? exp2(fma(logit(base, mask_at, j, scale_abs) - row_m, u, -log2_l)) : 0.0;
  }
  if (lane == 0u) {
    const uint row = bh * pc.sq + i;
    lse_out[row] = any ? fma(row_m, MASKED ? 1.0 : scale_abs, log2_l * OA_LN2) : -OA_INF;
    stats_out[row] = vec2(any ? row_m : -OA_INF, log2_l);
  }
}
