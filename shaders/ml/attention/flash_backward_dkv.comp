#version 450
// Flash attention backward, pass 2 of 2: dk and dv.
// One workgroup: BLOCK_M key rows of one batch-head (grid x = key blocks,
// y = batch-heads) and one range of query_split queries (grid z; a multiple
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

layout(std430, binding = 0) readonly buffer Q { float q_in[]; };
layout(std430, binding = 0) readonly buffer Q4 { vec4 q4_in[]; };
layout(std430, binding = 1) readonly buffer K { float k_in[]; };
layout(std430, binding = 1) readonly buffer K4 { vec4 k4_in[]; };
layout(std430, binding = 2) readonly buffer V { float v_in[]; };
layout(std430, binding = 2) readonly buffer V4 { vec4 v4_in[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) readonly buffer DO { float do_in[]; };
layout(std430, binding = 4) readonly buffer DO4 { vec4 do4_in[]; };
layout(std430, binding = 5) readonly buffer Stats { vec2 stats_in[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta_in[]; };
layout(std430, binding = 7) writeonly buffer DK_ { float dk_out[]; };
layout(std430, binding = 7) writeonly buffer DK4 { vec4 dk4_out[]; };
layout(std430, binding = 8) writeonly buffer DV_ { float dv_out[]; };
layout(std430, binding = 8) writeonly buffer DV4 { vec4 dv4_out[]; };

#include "ml/attention/flash_backward_dkv.push.h"

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

#define DECLARE(i) vec4 k##i = vec4(0.0), dk##i = vec4(0.0), v##i = vec4(0.0), dv##i = vec4(0.0);
#define LOAD_K(i) if (uint(i) < KL) k##i = read_k(live, k_at, (uint(i) * LANES + lane) * 4u, pc.dh) * k_sign;
#define LOAD_V(i) if (uint(i) < VL) v##i = read_v(live, v_at, (uint(i) * LANES + lane) * 4u, pc.dv);
#define DOT_KQ(i) if (uint(i) < KL) sp += dot(k##i, q_tile[qb + uint(i) * LANES]);
#define DOT_VG(i) if (uint(i) < VL) gp += dot(v##i, do_tile[gb + uint(i) * LANES]);
#define ACCUMULATE_DV(i) if (uint(i) < VL) dv##i += p * do_tile[gb + uint(i) * LANES];
#define ACCUMULATE_DK(i) if (uint(i) < KL) dk##i += ds * q_tile[qb + uint(i) * LANES];
#define STORE_DK(i) if (uint(i) < KL) write_dk(dk_at, (uint(i) * LANES + lane) * 4u, pc.dh, dk##i * pc.scale);
#define STORE_DV(i) if (uint(i) < VL) write_dv(dv_at, (uint(i) * LANES + lane) * 4u, pc.dv, dv##i);

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint kj = row0 + gl_LocalInvocationID.x / LANES;
  const uint bh = OA_GROUP_ID.y;
  const bool live = kj < pc.sk;
  const int diag = int(pc.sk) - int(pc.sq);  // query i sees key j when j <= i + diag

  const uint k_at = live ? flash_row(bh, kj, pc.sk, pc.dh, pc.heads) : 0u;
  const uint v_at = live ? flash_row(bh, kj, pc.sk, pc.dv, pc.heads) : 0u;
  const float k_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  const uint mask_bh = MASKED ? flash_mask_row(bh, 0u, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) + kj : 0u;
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_K)
  FLASH_REGS(LOAD_V)

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
      float sp = 0.0, gp = 0.0;
      FLASH_REGS(DOT_KQ)
      FLASH_REGS(DOT_VG)
      float s = lane_sum(sp);
      const float dp = lane_sum(gp);
      const uint qi = i0 + t;
      const vec3 st = row_tile[t];
      const bool visible = live && st.y != -OA_INF && (pc.causal == 0u || int(kj) <= int(qi) + diag);
      if (MASKED && visible) s = fma(s, scale_abs, mask[mask_bh + qi * pc.mask_sq]);
      const float p = visible ? exp2(fma(s - st.x, u, -st.y)) : 0.0;
      const float ds = p * (dp - st.z);
      FLASH_REGS(ACCUMULATE_DV)
      FLASH_REGS(ACCUMULATE_DK)
    }
  }

  if (live) {
    const uint dk_at = OA_GROUP_ID.z * pc.part_k + k_at, dv_at = OA_GROUP_ID.z * pc.part_v + v_at;
    FLASH_REGS(STORE_DK)
    FLASH_REGS(STORE_DV)
  }
}
