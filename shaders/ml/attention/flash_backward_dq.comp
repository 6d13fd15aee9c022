#version 450
// Flash attention backward, pass 1 of 2: dq, and delta = rowsum(dO * O).
// Same work split as the forward (BLOCK_M query rows per workgroup, key and
// value tiles through shared memory, causal tiles skipped). Probabilities are
// recomputed from the saved log-sum-exp: p_j = exp2(s_j - lse * log2 e), then
// ds_j = p_j (dO . v_j - delta) and dq = scale * sum_j ds_j k_j. Rows whose
// lse is -inf (nothing visible) get dq = 0.
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
layout(std430, binding = 4) readonly buffer O { float o_in[]; };
layout(std430, binding = 4) readonly buffer O4 { vec4 o4_in[]; };
layout(std430, binding = 5) readonly buffer DO { float do_in[]; };
layout(std430, binding = 5) readonly buffer DO4 { vec4 do4_in[]; };
layout(std430, binding = 6) readonly buffer Lse { float lse_in[]; };
layout(std430, binding = 7) writeonly buffer DQ { float dq_out[]; };
layout(std430, binding = 7) writeonly buffer DQ4 { vec4 dq4_out[]; };
layout(std430, binding = 8) writeonly buffer Delta { float delta_out[]; };

OA_PUSH_BEGIN uint heads; uint sq; uint sk; uint dh; uint dv; float scale_log2; uint causal; uint mask_mode; float scale; OA_PUSH_END

shared vec4 k_tile[BLOCK_N * KW];
shared vec4 v_tile[BLOCK_N * VW];
FLASH_TILE_LOADER(load_k, k_tile, k_in, k4_in, KW)
FLASH_TILE_LOADER(load_v, v_tile, v_in, v4_in, VW)

vec4 q[KL];
vec4 dq[KL];
vec4 go[VL];  // dO row
vec4 o[VL];   // O row, only to form delta

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint qi = row0 + gl_LocalInvocationID.x / LANES;
  const uint bh = OA_GROUP_ID.y;
  const bool live = qi < pc.sq;
  const int diag = int(pc.sk) - int(pc.sq);

  const uint q_at = live ? flash_row(bh, qi, pc.sq, pc.dh, pc.heads) : 0u;
  const uint o_at = live ? flash_row(bh, qi, pc.sq, pc.dv, pc.heads) : 0u;
  FLASH_LOAD_ROW(q, KL, q_in, q4_in, live, q_at, lane * KL * 4u, pc.dh, pc.scale_log2)
  FLASH_LOAD_ROW(go, VL, do_in, do4_in, live, o_at, lane * VL * 4u, pc.dv, 1.0)
  FLASH_LOAD_ROW(o, VL, o_in, o4_in, live, o_at, lane * VL * 4u, pc.dv, 1.0)
  float part = 0.0;
  for (uint i = 0u; i < VL; ++i) part += dot(go[i], o[i]);
  const float delta = lane_sum(part);
  for (uint i = 0u; i < KL; ++i) dq[i] = vec4(0.0);
  const float lse2 = live ? lse_in[bh * pc.sq + qi] * OA_LOG2E : -OA_INF;

  uint key_end = pc.sk;
  int last_key = int(pc.sk) - 1;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M, pc.sq)) + diag, 0, int(pc.sk)));
    last_key = min(last_key, int(qi) + diag);
  }
  const bool any_visible = live && lse2 != -OA_INF;
  const uint mask_row = pc.mask_mode == 1u ? bh * pc.sq + qi : qi;

  for (uint key0 = 0u; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    load_k(bh, key0, pc.sk, pc.dh, pc.heads);
    load_v(bh, key0, pc.sk, pc.dv, pc.heads);
    barrier();
    for (uint j = 0u; j < BLOCK_N; ++j) {
      float sp = 0.0;
      for (uint i = 0u; i < KL; ++i) sp += dot(q[i], k_tile[j * KW + lane * KL + i]);
      float dpp = 0.0;
      for (uint i = 0u; i < VL; ++i) dpp += dot(go[i], v_tile[j * VW + lane * VL + i]);
      float sj = lane_sum(sp);
      const float dp = lane_sum(dpp);
      const int key = int(key0 + j);
      const bool visible = any_visible && key <= last_key;
      if (visible && pc.mask_mode != 0u) sj += mask[mask_row * pc.sk + uint(key)] * OA_LOG2E;
      const float p = visible ? exp2(sj - lse2) : 0.0;
      const float ds = p * (dp - delta);
      for (uint i = 0u; i < KL; ++i) dq[i] += ds * k_tile[j * KW + lane * KL + i];
    }
  }

  if (live) {
    FLASH_STORE_ROW(dq, KL, dq_out, dq4_out, q_at, lane * KL * 4u, pc.dh, pc.scale)
    if (lane == 0u) delta_out[bh * pc.sq + qi] = delta;
  }
}
