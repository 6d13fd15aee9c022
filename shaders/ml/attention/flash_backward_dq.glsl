// The body of ml/attention/flash_backward_dq (f32 tensors) and, with OA_FLASH_16
// defined, of ml/attention/flash_backward_dq_half (flash_common.glsl).
// Flash attention backward, pass 1 of 2: dq, and delta = rowsum(dO * O) - g_lse
// (g_lse: the gradient reaching the log-sum-exp output, when has_lse_grad).
// Same work split as the forward (BLOCK_M query rows per workgroup, key and
// value tiles through shared memory, causal tiles skipped). Probabilities are
// recomputed from the forward's stats (m, log2 l) as
// p_j = exp2((s_j - m) u - log2 l) (flash_common.glsl), then ds_j = p_j (dO . v_j - delta) and dq = scale * sum_j ds_j k_j. Rows
// with nothing visible (log2 l = -inf) get dq = 0.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/attention/flash_common.glsl"

FLASH_INPUT(0, Q, q_in, Q4, q4_in)
FLASH_INPUT(1, K, k_in, K4, k4_in)
FLASH_INPUT(2, V, v_in, V4, v4_in)
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
FLASH_INPUT(4, O, o_in, O4, o4_in)
FLASH_INPUT(5, DO, do_in, DO4, do4_in)
layout(std430, binding = 6) readonly buffer Stats { vec2 stats_in[]; };
layout(std430, binding = 7) writeonly buffer DQ { float dq_out[]; };
layout(std430, binding = 7) writeonly buffer DQ4 { vec4 dq4_out[]; };
layout(std430, binding = 8) writeonly buffer Delta { float delta_out[]; };
layout(std430, binding = 9) readonly buffer LseGrad { float lse_grad[]; };

#include "ml/attention/flash_backward_dq.push.h"

shared vec4 k_tile[BLOCK_N * KW];
shared vec4 v_tile[BLOCK_N * VW];
FLASH_READER(read_q, q_in, q4_in)
FLASH_READER(read_k, k_in, k4_in)
FLASH_READER(read_v, v_in, v4_in)
FLASH_READER(read_o, o_in, o4_in)
FLASH_READER(read_do, do_in, do4_in)
FLASH_WRITER(write_dq, dq_out, dq4_out)
FLASH_TILE_LOADER(load_k, k_tile, read_k, KW)
FLASH_TILE_LOADER(load_v, v_tile, read_v, VW)

#define DECLARE(i) vec4 q##i = vec4(0.0), dq##i = vec4(0.0), g##i = vec4(0.0);
#define LOAD_Q(i) if (uint(i) < KL) q##i = read_q(live, q_at, (uint(i) * LANES + lane) * 4u, pc.dh) * q_sign;
#define LOAD_DO(i)                                                  \
  if (uint(i) < VL) {                                                  \
    const uint c = (uint(i) * LANES + lane) * 4u;                         \
    g##i = read_do(live, o_at, c, pc.dv);                           \
    part += dot(g##i, read_o(live, o_at, c, pc.dv));                \
  }
#define DOT_QK(i) if (uint(i) < KL) sp += dot(q##i, k_tile[kb + uint(i) * LANES]);
#define DOT_GV(i) if (uint(i) < VL) gp += dot(g##i, v_tile[vb + uint(i) * LANES]);
#define ACCUMULATE_DQ(i) if (uint(i) < KL) dq##i += ds * k_tile[kb + uint(i) * LANES];
#define STORE_DQ(i) if (uint(i) < KL) write_dq(q_at, (uint(i) * LANES + lane) * 4u, pc.dh, dq##i * pc.scale);

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint qi = row0 + gl_LocalInvocationID.x / LANES;
  const uint bh = OA_GROUP_ID.y;
  const bool live = qi < pc.sq;
  const int diag = pc.diag;  // query i sees key j when j <= i + diag

  const uint q_at = live ? flash_row(bh, qi, pc.sq, pc.dh, pc.heads) : 0u;
  const uint o_at = live ? flash_row(bh, qi, pc.sq, pc.dv, pc.heads) : 0u;
  const float q_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_Q)
  float part = 0.0;
  FLASH_REGS(LOAD_DO)
  // d lse_i / d s_ij = p_ij, so a gradient g_lse on the log-sum-exp enters ds_ij = p_ij (dp_ij - delta_i) through delta.
  const float delta = lane_sum(part) - (live && pc.has_lse_grad != 0u ? lse_grad[bh * pc.sq + qi] : 0.0);
  const vec2 stats = live ? stats_in[bh * pc.sq + qi] : vec2(-OA_INF);
  const float m = stats.x, log2_l = stats.y;

  uint key_end = pc.sk;
  int last_key = int(pc.sk) - 1;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M, pc.sq)) + diag, 0, int(pc.sk)));
    last_key = min(last_key, int(qi) + diag);
  }
  const bool any_visible = live && log2_l != -OA_INF;
  const uint mask_at = MASKED && live ? flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;

  for (uint key0 = 0u; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    load_k(bh, key0, pc.sk, pc.dh, pc.heads);
    load_v(bh, key0, pc.sk, pc.dv, pc.heads);
    barrier();
    for (uint j = 0u; j < BLOCK_N; ++j) {
      const uint kb = j * KW + lane;
      const uint vb = j * VW + lane;
      float sp = 0.0, gp = 0.0;
      FLASH_REGS(DOT_QK)
      FLASH_REGS(DOT_GV)
      float s = lane_sum(sp);
      const float dp = lane_sum(gp);
      const int key = int(key0 + j);
      const bool visible = any_visible && key <= last_key;
      if (MASKED && visible) s = fma(s, scale_abs, mask[mask_at + uint(key)]);
      const float p = visible ? exp2(fma(s - m, u, -log2_l)) : 0.0;
      const float ds = p * (dp - delta);
      FLASH_REGS(ACCUMULATE_DQ)
    }
  }

  if (live) {
    FLASH_REGS(STORE_DQ)
    if (lane == 0u) delta_out[bh * pc.sq + qi] = delta;
  }
}
