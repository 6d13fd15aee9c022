#version 450
// Flash attention forward (FlashAttention-2 style, base-2 online softmax).
// One workgroup: BLOCK_M query rows of one batch-head (grid x = query blocks,
// y = batch-heads). Each query row keeps q (pre-scaled by scale * log2 e), its
// output accumulator, a running max m and a running sum l in registers; key
// and value rows stream through shared memory in tiles of BLOCK_N. Key tiles
// entirely above the causal diagonal of the block are never loaded.
// Output: o = sum_j p_j v_j / l and lse = (m + log2 l) * ln 2 per row; a row
// with no visible key writes zeros and lse = -inf.
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
layout(std430, binding = 4) writeonly buffer O { float o_out[]; };
layout(std430, binding = 4) writeonly buffer O4 { vec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse_out[]; };

// mask_mode: 0 none, 1 [BH*Sq, Sk], 2 [Sq, Sk] broadcast over batch-heads.
OA_PUSH_BEGIN uint heads; uint sq; uint sk; uint dh; uint dv; float scale_log2; uint causal; uint mask_mode; OA_PUSH_END

shared vec4 k_tile[BLOCK_N * KW];
shared vec4 v_tile[BLOCK_N * VW];
FLASH_TILE_LOADER(load_k, k_tile, k_in, k4_in, KW)
FLASH_TILE_LOADER(load_v, v_tile, v_in, v4_in, VW)

vec4 q[KL];
vec4 o[VL];
float s[BLOCK_N];

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint qi = row0 + gl_LocalInvocationID.x / LANES;
  const uint bh = OA_GROUP_ID.y;
  const bool live = qi < pc.sq;
  const int diag = int(pc.sk) - int(pc.sq);  // query i sees keys j <= i + diag when causal

  const uint q_at = live ? flash_row(bh, qi, pc.sq, pc.dh, pc.heads) : 0u;
  FLASH_LOAD_ROW(q, KL, q_in, q4_in, live, q_at, lane * KL * 4u, pc.dh, pc.scale_log2)
  for (uint i = 0u; i < VL; ++i) o[i] = vec4(0.0);

  // Keys this block may see, and the last key this row may see.
  uint key_end = pc.sk;
  int last_key = int(pc.sk) - 1;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M, pc.sq)) + diag, 0, int(pc.sk)));
    last_key = min(last_key, int(qi) + diag);
  }
  const uint mask_row = pc.mask_mode == 1u ? bh * pc.sq + qi : qi;

  float m = -OA_INF;
  float l = 0.0;
  for (uint key0 = 0u; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    load_k(bh, key0, pc.sk, pc.dh, pc.heads);
    load_v(bh, key0, pc.sk, pc.dv, pc.heads);
    barrier();

    float block_max = -OA_INF;
    for (uint j = 0u; j < BLOCK_N; ++j) {
      float part = 0.0;
      for (uint i = 0u; i < KL; ++i) part += dot(q[i], k_tile[j * KW + lane * KL + i]);
      float sj = lane_sum(part);
      const int key = int(key0 + j);
      const bool visible = live && key <= last_key;
      if (visible && pc.mask_mode != 0u) sj += mask[mask_row * pc.sk + uint(key)] * OA_LOG2E;
      s[j] = visible ? sj : -OA_INF;
      block_max = max(block_max, s[j]);
    }
    const float m_new = max(m, block_max);
    const float m_use = m_new == -OA_INF ? 0.0 : m_new;  // keeps exp2 finite while nothing is visible
    const float alpha = exp2(m - m_use);
    l *= alpha;
    for (uint i = 0u; i < VL; ++i) o[i] *= alpha;
    for (uint j = 0u; j < BLOCK_N; ++j) {
      const float p = exp2(s[j] - m_use);
      l += p;
      for (uint i = 0u; i < VL; ++i) o[i] += p * v_tile[j * VW + lane * VL + i];
    }
    m = m_new;
  }

  if (live) {
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    const uint o_at = flash_row(bh, qi, pc.sq, pc.dv, pc.heads);
    FLASH_STORE_ROW(o, VL, o_out, o4_out, o_at, lane * VL * 4u, pc.dv, inv)
    if (lane == 0u) lse_out[bh * pc.sq + qi] = l > 0.0 ? (m + log2(l)) * OA_LN2 : -OA_INF;
  }
}
