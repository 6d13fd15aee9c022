// The body of ml/attention/flash_forward (f32 tensors) and, with OA_FLASH_16
// defined, of ml/attention/flash_forward_half (flash_common.glsl).
// Flash attention forward (FlashAttention-2 style, base-2 online softmax).
// One workgroup: ROWS * BLOCK_M query rows of one batch-head (grid x = query
// blocks, y = batch-heads); lane group g (LANES invocations) owns rows g and,
// when ROWS = 2, g + BLOCK_M of the block, so that each key and value vec4
// read from shared memory serves both rows. Each query row keeps q (times the sign of scale), its
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

FLASH_INPUT(0, Q, q_in, Q4, q4_in)
FLASH_INPUT(1, K, k_in, K4, k4_in)
FLASH_INPUT(2, V, v_in, V4, v4_in)
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer O { float o_out[]; };
layout(std430, binding = 4) writeonly buffer O4 { vec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 6) writeonly buffer Stats { vec2 stats_out[]; };

// Mask element of (bh, i, j): flash_mask_row(bh, i, mask_heads, mask_sb, mask_sh, mask_sq) + j.
#include "ml/attention/flash_forward.push.h"
layout(constant_id = 6) const bool PARTIAL = false;
layout(constant_id = 7) const uint ROWS = 1;  // query rows per lane group: 1 or 2

const uint CHUNK = 8u;  // keys scored at once (BLOCK_N is a multiple)
shared vec4 k_tile[BLOCK_N * KW];
shared vec4 v_tile[BLOCK_N * VW];
FLASH_READER(read_q, q_in, q4_in)
FLASH_READER(read_k, k_in, k4_in)
FLASH_READER(read_v, v_in, v4_in)
FLASH_WRITER(write_o, o_out, o4_out)
FLASH_TILE_LOADER(load_k, k_tile, read_k, KW)
FLASH_TILE_LOADER(load_v, v_tile, read_v, VW)

// Registers of the two rows: q, o of row A and qb, ob of row B (folded away
// when ROWS = 1).
#define DECLARE(i) vec4 q##i = vec4(0.0), o##i = vec4(0.0), qb##i = vec4(0.0), ob##i = vec4(0.0);
#define LOAD_Q(i)                                                                             \
  if (uint(i) < KL) {                                                                         \
    q##i = read_q(live, q_at, (uint(i) * LANES + lane) * 4u, pc.dh) * q_sign;                 \
    if (ROWS == 2u) qb##i = read_q(live_b, q_at_b, (uint(i) * LANES + lane) * 4u, pc.dh) * q_sign; \
  }
#define DOT_QK(i)                                \
  if (uint(i) < KL) {                            \
    const vec4 kv = k_tile[kb + uint(i) * LANES]; \
    part += dot(q##i, kv);                       \
    if (ROWS == 2u) part_b += dot(qb##i, kv);    \
  }
#define RESCALE_O(i)                    \
  if (uint(i) < VL) {                   \
    o##i *= alpha;                      \
    if (ROWS == 2u) ob##i *= alpha_b;   \
  }
#define ACCUMULATE_PV(i)                         \
  if (uint(i) < VL) {                            \
    const vec4 vv = v_tile[vb + uint(i) * LANES]; \
    o##i += p * vv;                              \
    if (ROWS == 2u) ob##i += p_b * vv;           \
  }
#define STORE_O(i) if (uint(i) < VL) write_o(o_at, (uint(i) * LANES + lane) * 4u, pc.dv, o##i * inv);
#define STORE_OB(i) if (uint(i) < VL) write_o(o_at, (uint(i) * LANES + lane) * 4u, pc.dv, ob##i * inv);

// Writes row `row` (running max M, sum L, registers through STORE).
#define FINISH_ROW(row, M, L, STORE)                                                                         \
  if (PARTIAL) {                                                                                             \
    const uint part_row = OA_GROUP_ID.z * pc.part_rows + bh * pc.sq + row;                                   \
    const float inv = 1.0;                                                                                   \
    const uint o_at = part_row * pc.dv;                                                                      \
    FLASH_REGS(STORE)                                                                                        \
    if (lane == 0u) stats_out[part_row] = vec2(M, L);                                                        \
  } else {                                                                                                   \
    /* L == 0: nothing visible; a NaN L (a NaN logit) makes the whole row NaN. */                           \
    const float inv = L == 0.0 ? 0.0 : 1.0 / L;                                                              \
    const uint o_at = flash_row(bh, row, pc.sq, pc.dv, pc.heads);                                            \
    FLASH_REGS(STORE)                                                                                        \
    if (lane == 0u) {                                                                                        \
      const float log2_l = L == 0.0 ? -OA_INF : log2(L);                                                     \
      lse_out[bh * pc.sq + row] = L == 0.0 ? -OA_INF : fma(M, MASKED ? 1.0 : scale_abs, log2_l * OA_LN2);    \
      stats_out[bh * pc.sq + row] = vec2(L == 0.0 ? -OA_INF : M, log2_l);                                    \
    }                                                                                                        \
  }

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M * ROWS;
  const uint qi = row0 + gl_LocalInvocationID.x / LANES;
  const uint qi_b = qi + BLOCK_M;
  const uint bh = OA_GROUP_ID.y;
  const bool live = qi < pc.sq;
  const bool live_b = ROWS == 2u && qi_b < pc.sq;
  const int diag = pc.diag;  // query i sees keys j <= i + diag when causal

  const uint q_at = live ? flash_row(bh, qi, pc.sq, pc.dh, pc.heads) : 0u;
  const uint q_at_b = live_b ? flash_row(bh, qi_b, pc.sq, pc.dh, pc.heads) : 0u;
  const float q_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_Q)

  // Keys this block may see, and the last key each row may see, within this
  // workgroup's range of keys (a multiple of BLOCK_N).
  const uint key_begin = OA_GROUP_ID.z * pc.key_split;
  uint key_end = min(pc.sk, key_begin + pc.key_split);
  int last_key = int(key_end) - 1;
  int last_key_b = last_key;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M * ROWS, pc.sq)) + diag, int(key_begin), int(key_end)));
    last_key = min(last_key, int(qi) + diag);
    last_key_b = min(last_key_b, int(qi_b) + diag);
  }
  const uint mask_at = MASKED && live ? flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;
  const uint mask_at_b = MASKED && live_b ? flash_mask_row(bh, qi_b, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;

  float m = -OA_INF, m_b = -OA_INF;
  float l = 0.0, l_b = 0.0;
  for (uint key0 = key_begin; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    load_k(bh, key0, pc.sk, pc.dh, pc.heads);
    load_v(bh, key0, pc.sk, pc.dv, pc.heads);
    barrier();
    for (uint c0 = 0u; c0 < BLOCK_N; c0 += CHUNK) {
      float sc[CHUNK], sc_b[CHUNK];
      float chunk_max = -OA_INF, chunk_max_b = -OA_INF;
      [[unroll]] for (uint jj = 0u; jj < CHUNK; ++jj) {
        const uint kb = (c0 + jj) * KW + lane;
        float part = 0.0, part_b = 0.0;
        FLASH_REGS(DOT_QK)
        float s = lane_sum(part);
        const int key = int(key0 + c0 + jj);
        const bool visible = live && key <= last_key;
        if (MASKED && visible) s = fma(s, scale_abs, mask[mask_at + uint(key)]);
        sc[jj] = visible ? s : -OA_INF;
        chunk_max = oa_max(chunk_max, sc[jj]);
        if (ROWS == 2u) {
          float s_b = lane_sum(part_b);
          const bool visible_b = live_b && key <= last_key_b;
          if (MASKED && visible_b) s_b = fma(s_b, scale_abs, mask[mask_at_b + uint(key)]);
          sc_b[jj] = visible_b ? s_b : -OA_INF;
          chunk_max_b = oa_max(chunk_max_b, sc_b[jj]);
        }
      }
      // o and l are 0 until a key is visible.
      const float m_new = oa_max(m, chunk_max);
      const float alpha = m == -OA_INF ? 0.0 : exp2((m - m_new) * u);
      l *= alpha;
      m = m_new;
      float alpha_b = 0.0;
      if (ROWS == 2u) {
        const float m_new_b = oa_max(m_b, chunk_max_b);
        alpha_b = m_b == -OA_INF ? 0.0 : exp2((m_b - m_new_b) * u);
        l_b *= alpha_b;
        m_b = m_new_b;
      }
      FLASH_REGS(RESCALE_O)
      [[unroll]] for (uint jj = 0u; jj < CHUNK; ++jj) {
        const uint vb = (c0 + jj) * VW + lane;
        const float p = sc[jj] == -OA_INF ? 0.0 : exp2((sc[jj] - m) * u);
        l += p;
        float p_b = 0.0;
        if (ROWS == 2u) {
          p_b = sc_b[jj] == -OA_INF ? 0.0 : exp2((sc_b[jj] - m_b) * u);
          l_b += p_b;
        }
        FLASH_REGS(ACCUMULATE_PV)
      }
    }
  }

  if (live) { FINISH_ROW(qi, m, l, STORE_O) }
  if (live_b) { FINISH_ROW(qi_b, m_b, l_b, STORE_OB) }
}
