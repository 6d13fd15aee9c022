#version 450
// Flash attention forward (FlashAttention-2 style, base-2 online softmax).
// One workgroup: BLOCK_M query rows of one batch-head (grid x = query blocks,
// y = batch-heads). Each query row keeps q (times the sign of scale), its
// output accumulator o, the running max m and the running sum l in registers;
// key and value rows stream through shared memory in tiles of BLOCK_N. Key
// tiles entirely above the causal diagonal of the block are never loaded.
// Keys are taken CHUNK at a time: their logits (raw scores, or masked logits
// when MASKED; see flash_common.glsl) are held in registers, the running max
// moves once per chunk to m' = max(m, max_j s_j), o and l are rescaled by
// exp2((m - m') u), then p_j = exp2((s_j - m') u), l += p_j, o += p_j v_j.
// Output: o / l, lse = m' (scaled to natural units) + ln l, and stats =
// (m', log2 l) for the backward; a row with no visible key writes zeros,
// lse = -inf and stats = (-inf, -inf).
// PARTIAL (split keys, when the query blocks alone leave the device idle):
// workgroup z reads only keys [z * key_split, (z + 1) * key_split) and writes
// its row's unnormalized o at row z * part_rows + bh * sq + i of a dense
// [ranges * part_rows, dv] tensor (binding 4) and (m', l) at the same row of
// binding 6; flash_combine.comp merges the ranges.
// Binding 5 (lse) is not written then.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
layout(std430, binding = 6) writeonly buffer Stats { vec2 stats_out[]; };

// Mask element of (bh, i, j): flash_mask_row(bh, i, mask_heads, mask_sb, mask_sh, mask_sq) + j.
#include "ml/attention/flash_forward.push.h"
layout(constant_id = 6) const bool PARTIAL = false;

const uint CHUNK = 8u;  // keys scored at once (BLOCK_N is a multiple)
shared vec4 k_tile[BLOCK_N * KW];
shared vec4 v_tile[BLOCK_N * VW];
FLASH_READER(read_q, q_in, q4_in)
FLASH_READER(read_k, k_in, k4_in)
FLASH_READER(read_v, v_in, v4_in)
FLASH_WRITER(write_o, o_out, o4_out)
FLASH_TILE_LOADER(load_k, k_tile, read_k, KW)
FLASH_TILE_LOADER(load_v, v_tile, read_v, VW)

#define DECLARE(i) vec4 q##i = vec4(0.0), o##i = vec4(0.0);
#define LOAD_Q(i) if (uint(i) < KL) q##i = read_q(live, q_at, (uint(i) * LANES + lane) * 4u, pc.dh) * q_sign;
#define DOT_QK(i) if (uint(i) < KL) part += dot(q##i, k_tile[kb + uint(i) * LANES]);
#define RESCALE_O(i) if (uint(i) < VL) o##i *= alpha;
#define ACCUMULATE_PV(i) if (uint(i) < VL) o##i += p * v_tile[vb + uint(i) * LANES];
#define STORE_O(i) if (uint(i) < VL) write_o(o_at, (uint(i) * LANES + lane) * 4u, pc.dv, o##i * inv);

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint qi = row0 + gl_LocalInvocationID.x / LANES;
  const uint bh = OA_GROUP_ID.y;
  const bool live = qi < pc.sq;
  const int diag = int(pc.sk) - int(pc.sq);  // query i sees keys j <= i + diag when causal

  const uint q_at = live ? flash_row(bh, qi, pc.sq, pc.dh, pc.heads) : 0u;
  const float q_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_Q)

  // Keys this block may see, and the last key this row may see, within this
  // workgroup's range of keys (a multiple of BLOCK_N).
  const uint key_begin = OA_GROUP_ID.z * pc.key_split;
  uint key_end = min(pc.sk, key_begin + pc.key_split);
  int last_key = int(key_end) - 1;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M, pc.sq)) + diag, int(key_begin), int(key_end)));
    last_key = min(last_key, int(qi) + diag);
  }
  const uint mask_at = MASKED && live ? flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;

  float m = -OA_INF;
  float l = 0.0;
  for (uint key0 = key_begin; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    load_k(bh, key0, pc.sk, pc.dh, pc.heads);
    load_v(bh, key0, pc.sk, pc.dv, pc.heads);
    barrier();
    for (uint c0 = 0u; c0 < BLOCK_N; c0 += CHUNK) {
      float sc[CHUNK];
      float chunk_max = -OA_INF;
      [[unroll]] for (uint jj = 0u; jj < CHUNK; ++jj) {
        const uint kb = (c0 + jj) * KW + lane;
        float part = 0.0;
        FLASH_REGS(DOT_QK)
        float s = lane_sum(part);
        const int key = int(key0 + c0 + jj);
        const bool visible = live && key <= last_key;
        if (MASKED && visible) s = fma(s, scale_abs, mask[mask_at + uint(key)]);
        sc[jj] = visible ? s : -OA_INF;
        chunk_max = oa_max(chunk_max, sc[jj]);
      }
      const float m_new = oa_max(m, chunk_max);
      const float alpha = m == -OA_INF ? 0.0 : exp2((m - m_new) * u);  // o and l are 0 until a key is visible
      l *= alpha;
      FLASH_REGS(RESCALE_O)
      m = m_new;
      [[unroll]] for (uint jj = 0u; jj < CHUNK; ++jj) {
        const uint vb = (c0 + jj) * VW + lane;
        const float p = sc[jj] == -OA_INF ? 0.0 : exp2((sc[jj] - m) * u);
        l += p;
        FLASH_REGS(ACCUMULATE_PV)
      }
    }
  }

  if (live && PARTIAL) {
    const uint part_row = OA_GROUP_ID.z * pc.part_rows + bh * pc.sq + qi;
    const float inv = 1.0;
    const uint o_at = part_row * pc.dv;
    FLASH_REGS(STORE_O)
    if (lane == 0u) stats_out[part_row] = vec2(m, l);
  } else if (live) {
    // l == 0: nothing visible; a NaN l (a NaN logit) makes the whole row NaN.
    const float inv = l == 0.0 ? 0.0 : 1.0 / l;
    const uint o_at = flash_row(bh, qi, pc.sq, pc.dv, pc.heads);
    FLASH_REGS(STORE_O)
    if (lane == 0u) {
      const float log2_l = l == 0.0 ? -OA_INF : log2(l);
      lse_out[bh * pc.sq + qi] = l == 0.0 ? -OA_INF : fma(m, MASKED ? 1.0 : scale_abs, log2_l * OA_LN2);
      stats_out[bh * pc.sq + qi] = vec2(l == 0.0 ? -OA_INF : m, log2_l);
    }
  }
}
