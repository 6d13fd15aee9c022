// The body of ml/attention/flash_backward_dkv (f32 tensors) and, with OA_FLASH_16
// defined, of ml/attention/flash_backward_dkv_half (flash_common.glsl).
// Flash attention backward, pass 2 of 2: dk and dv.
// One workgroup: ROWS * BLOCK_M key rows of one batch-head (grid x = key
// blocks, y = batch-heads; lane group g owns rows g and, when ROWS = 2,
// g + BLOCK_M of the block, so each query and dO vec4 read from shared
// memory serves both) and one range of query_split queries (grid z; a multiple
// of BLOCK_N); each key row keeps k (times the sign of scale), v and
// the dk, dv accumulators in registers while query, dO, stats and delta rows
// of its range stream through shared memory in tiles of BLOCK_N, from the
// first tile with a query that can see the block when causal. Range z writes
// its partial sums at element offsets z * part_k and z * part_v (a later pass
// adds the ranges in order when there are several; zeros for a range that
// no query of it can see). Per visible pair, with the
// forward's stats (m_i, log2 l_i) (flash_common.glsl):
// p = exp2((s - m_i) u - log2 l_i), dv += p dO_i, ds = p (dO_i . v - delta_i),
// dk += ds q_i; finally dk *= scale.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/attention/flash_common.glsl"

FLASH_INPUT(0, Q, q_in, Q4, q4_in)
FLASH_INPUT(1, K, k_in, K4, k4_in)
FLASH_INPUT(2, V, v_in, V4, v4_in)
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
FLASH_INPUT(4, DO, do_in, DO4, do4_in)
layout(std430, binding = 5) readonly buffer Stats { vec2 stats_in[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta_in[]; };
layout(std430, binding = 7) writeonly buffer DK_ { float dk_out[]; };
layout(std430, binding = 7) writeonly buffer DK4 { vec4 dk4_out[]; };
layout(std430, binding = 8) writeonly buffer DV_ { float dv_out[]; };
layout(std430, binding = 8) writeonly buffer DV4 { vec4 dv4_out[]; };

#include "ml/attention/flash_backward_dkv.push.h"

layout(constant_id = 6) const uint ROWS = 1;  // key rows per lane group: 1 or 2

shared vec4 q_tile[BLOCK_N * KW];
shared vec4 do_tile[BLOCK_N * VW];
shared vec3 row_tile[BLOCK_N];  // per query: m, log2 l, delta
FLASH_READER(read_q, q_in, q4_in)
FLASH_READER(read_k, k_in, k4_in)
FLASH_READER(read_v, v_in, v4_in)
FLASH_READER(read_do, do_in, do4_in)
FLASH_WRITER(write_dk, dk_out, dk4_out)
FLASH_WRITER(write_dv, dv_out, dv4_out)
FLASH_TILE_LOADER(load_q, q_tile, read_q, KW)
FLASH_TILE_LOADER(load_do, do_tile, read_do, VW)

// Registers of row A (k, v, dk, dv) and row B (kb_, vb_, dkb, dvb; folded away when ROWS = 1).
#define DECLARE(i) vec4 k##i = vec4(0.0), dk##i = vec4(0.0), v##i = vec4(0.0), dv##i = vec4(0.0), \
                        kb_##i = vec4(0.0), dkb##i = vec4(0.0), vb_##i = vec4(0.0), dvb##i = vec4(0.0);
#define LOAD_KV(i)                                                                                       \
  if (uint(i) < KL) {                                                                                    \
    k##i = read_k(live, k_at, (uint(i) * LANES + lane) * 4u, pc.dh) * k_sign;                            \
    if (ROWS == 2u) kb_##i = read_k(live_b, k_at_b, (uint(i) * LANES + lane) * 4u, pc.dh) * k_sign;      \
  }                                                                                                      \
  if (uint(i) < VL) {                                                                                    \
    v##i = read_v(live, v_at, (uint(i) * LANES + lane) * 4u, pc.dv);                                     \
    if (ROWS == 2u) vb_##i = read_v(live_b, v_at_b, (uint(i) * LANES + lane) * 4u, pc.dv);               \
  }
#define DOT(i)                                       \
  if (uint(i) < KL) {                                \
    const vec4 x = q_tile[qb + uint(i) * LANES];     \
    sp += dot(k##i, x);                              \
    if (ROWS == 2u) sp_b += dot(kb_##i, x);          \
  }                                                  \
  if (uint(i) < VL) {                                \
    const vec4 g = do_tile[gb + uint(i) * LANES];    \
    gp += dot(v##i, g);                              \
    if (ROWS == 2u) gp_b += dot(vb_##i, g);          \
  }
#define ACCUMULATE(i)                                \
  if (uint(i) < VL) {                                \
    const vec4 g = do_tile[gb + uint(i) * LANES];    \
    dv##i += p * g;                                  \
    if (ROWS == 2u) dvb##i += p_b * g;               \
  }                                                  \
  if (uint(i) < KL) {                                \
    const vec4 x = q_tile[qb + uint(i) * LANES];     \
    dk##i += ds * x;                                 \
    if (ROWS == 2u) dkb##i += ds_b * x;              \
  }
#define STORE(i)                                                                                        \
  if (uint(i) < KL) write_dk(dk_at, (uint(i) * LANES + lane) * 4u, pc.dh, dk##i * pc.scale);            \
  if (uint(i) < VL) write_dv(dv_at, (uint(i) * LANES + lane) * 4u, pc.dv, dv##i);
#define STORE_B(i)                                                                                      \
  if (uint(i) < KL) write_dk(dk_at, (uint(i) * LANES + lane) * 4u, pc.dh, dkb##i * pc.scale);           \
  if (uint(i) < VL) write_dv(dv_at, (uint(i) * LANES + lane) * 4u, pc.dv, dvb##i);

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M * ROWS;
  const uint kj = row0 + gl_LocalInvocationID.x / LANES;
  const uint kj_b = kj + BLOCK_M;
  const uint bh = OA_GROUP_ID.y;
  const bool live = kj < pc.sk;
  const bool live_b = ROWS == 2u && kj_b < pc.sk;
  const int diag = pc.diag;  // query i sees key j when j <= i + diag

  const uint k_at = live ? flash_row(bh, kj, pc.sk, pc.dh, pc.heads) : 0u;
  const uint v_at = live ? flash_row(bh, kj, pc.sk, pc.dv, pc.heads) : 0u;
  const uint k_at_b = live_b ? flash_row(bh, kj_b, pc.sk, pc.dh, pc.heads) : 0u;
  const uint v_at_b = live_b ? flash_row(bh, kj_b, pc.sk, pc.dv, pc.heads) : 0u;
  const float k_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  const uint mask_bh = MASKED ? flash_mask_row(bh, 0u, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_KV)

  const uint range0 = OA_GROUP_ID.z * pc.query_split;
  const uint query_end = min(pc.sq, range0 + pc.query_split);
  const uint query_begin = pc.causal != 0u ? uint(clamp(int(row0) - diag, int(range0), int(query_end))) : range0;
  // Tiles start at multiples of BLOCK_N past range0, so none crosses into the next range.
  for (uint i0 = query_begin - (query_begin - range0) % BLOCK_N; i0 < query_end; i0 += BLOCK_N) {
    barrier();
    load_q(bh, i0, pc.sq, pc.dh, pc.heads);
    load_do(bh, i0, pc.sq, pc.dv, pc.heads);
    for (uint t = gl_LocalInvocationID.x; t < BLOCK_N; t += THREADS) {
      const bool in_range = i0 + t < query_end;
      const vec2 st = in_range ? stats_in[bh * pc.sq + i0 + t] : vec2(-OA_INF);
      row_tile[t] = vec3(st, in_range ? delta_in[bh * pc.sq + i0 + t] : 0.0);
    }
    barrier();
    for (uint t = 0u; t < BLOCK_N; ++t) {
      const uint qb = t * KW + lane;
      const uint gb = t * VW + lane;
      float sp = 0.0, gp = 0.0, sp_b = 0.0, gp_b = 0.0;
      FLASH_REGS(DOT)
      const uint qi = i0 + t;
      const vec3 st = row_tile[t];
      float s = lane_sum(sp);
      const float dp = lane_sum(gp);
      const bool visible = live && st.y != -OA_INF && (pc.causal == 0u || int(kj) <= int(qi) + diag);
      if (MASKED && visible) s = fma(s, scale_abs, mask[mask_bh + kj + qi * pc.mask_sq]);
      const float p = visible ? exp2(fma(s - st.x, u, -st.y)) : 0.0;
      const float ds = p * (dp - st.z);
      float p_b = 0.0, ds_b = 0.0;
      if (ROWS == 2u) {
        float s_b = lane_sum(sp_b);
        const float dp_b = lane_sum(gp_b);
        const bool visible_b = live_b && st.y != -OA_INF && (pc.causal == 0u || int(kj_b) <= int(qi) + diag);
        if (MASKED && visible_b) s_b = fma(s_b, scale_abs, mask[mask_bh + kj_b + qi * pc.mask_sq]);
        p_b = visible_b ? exp2(fma(s_b - st.x, u, -st.y)) : 0.0;
        ds_b = p_b * (dp_b - st.z);
      }
      FLASH_REGS(ACCUMULATE)
    }
  }

  if (live) {
    const uint dk_at = OA_GROUP_ID.z * pc.part_k + k_at, dv_at = OA_GROUP_ID.z * pc.part_v + v_at;
    FLASH_REGS(STORE)
  }
  if (live_b) {
    const uint dk_at = OA_GROUP_ID.z * pc.part_k + k_at_b, dv_at = OA_GROUP_ID.z * pc.part_v + v_at_b;
    FLASH_REGS(STORE_B)
  }
}
