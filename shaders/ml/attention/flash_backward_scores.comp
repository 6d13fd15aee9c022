#version 450
// Flash attention backward through GEMMs, the step between them, for one
// block of `queries` query rows (query0 ..) of each batch-head head0 ..
// against its first `cols` keys: turns raw scores s = q.k (times the sign of
// scale; `rows` rows of `cols` in `scores`, head-major) into probabilities
// p = exp2((s - m) u - log2 l) from the forward's stats, as the fused passes
// do (flash_common.glsl), and the products dp = dO.v (alike in `grads`) into
// score gradients scale * p (dp - delta), delta = rowsum(dO * O) - g_lse,
// both in place. Hidden keys (causal, -inf mask, a row with nothing
// visible) get p = 0 and a zero gradient.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

layout(std430, binding = 0) buffer Scores { float scores[]; };
layout(std430, binding = 1) buffer Grads { float grads[]; };
layout(std430, binding = 2) readonly buffer O { float o_in[]; };
layout(std430, binding = 3) readonly buffer DO { float do_in[]; };
layout(std430, binding = 4) readonly buffer Stats { vec2 stats_in[]; };
layout(std430, binding = 5) readonly buffer Mask { float mask[]; };
layout(std430, binding = 6) readonly buffer LseGrad { float lse_grad[]; };

#include "ml/attention/flash_backward_scores.push.h"
#include "common/rows.glsl"
#include "ml/attention/flash_layout.glsl"

layout(constant_id = 1) const bool MASKED = false;

void main() {
  const uint lane = rows_lane(), r = rows_row();
  const bool live = r < pc.rows;
  const uint sq = pc.sq, sk = pc.sk, dv = pc.dv;
  const uint head = r / pc.queries;
  const uint bh = pc.head0 + head, i = pc.query0 + (r - head * pc.queries);
  const uint row = bh * sq + i;

  float part = 0.0;
  if (live) {
    const uint at = flash_row(bh, i, sq, dv, pc.heads);
    for (uint c = lane; c < dv; c += LANES) part += do_in[at + c] * o_in[at + c];
  }
  // d lse_i / d s_ij = p_ij, so a gradient on the log-sum-exp enters through delta.
  const float delta = rows_sum(part) - (live && pc.has_lse_grad != 0u ? lse_grad[row] : 0.0);
  if (!live) return;

  const vec2 st = stats_in[row];
  const float scale = pc.scale, scale_abs = abs(scale);
  const float u = MASKED ? OA_LOG2E : scale_abs * OA_LOG2E;
  const int last = pc.causal != 0u ? int(i) + pc.diag : int(sk) - 1;
  const bool any_visible = st.y != -OA_INF;
  const uint mask_at =
      MASKED ? flash_mask_row(bh, i, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;
  const uint base = r * pc.cols;
  for (uint j = lane; j < pc.cols; j += LANES) {
    const bool visible = any_visible && int(j) <= last;
    float s = scores[base + j];
    if (MASKED && visible) s = fma(s, scale_abs, mask[mask_at + j]);
    const float p = visible ? exp2(fma(s - st.x, u, -st.y)) : 0.0;
    scores[base + j] = p;
    grads[base + j] = scale * p * (grads[base + j] - delta);
  }
}
