#version 450
// Flash attention forward on the tensor cores with workgroup-scope
// cooperative matrices (GL_NV_cooperative_matrix2) for f16 q, k, v. The
// problem, push constants and numerics are those of flash_forward.glsl
// (flash_common.glsl): raw scores s = sign(scale) q.k, base-2 online softmax
// with the running max in the same units, an additive mask forming the logit
// fma(s, |scale|, mask) in f32, NaN in a logit making its row NaN, rows with
// no visible key giving zeros and lse = -inf. The output is f16 (rounded
// once); lse and stats are f32, as flash_forward.glsl writes them unsplit.
//
// A workgroup owns BR query rows of one batch-head and walks its visible keys
// BC at a time. The tiles live in workgroup-scope matrices, which the driver
// spreads over the workgroup's registers; a row's running max m, sum l and
// rescaling alpha live in shared memory, written by the invocation holding
// the row's column 0 and read by every element of the row (their row is
// known: coopMatPerElementNV), so no per-row value takes a tile of registers:
//   S = q k^T (f32 accumulators; k's rows loaded transposed), its logits and
//   hidden keys formed element by element, the tile's row max by a row
//   reduction; then per row m_new = max(m, tile max) and alpha =
//   exp2((m - m_new) u); P = exp2((S - m_new) u) rounded to f16; the row sums
//   of that f16 P (the weights P v takes) as P x ones on the tensor cores;
//   l = alpha l + row sum and o = alpha o + P v.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

layout(std430, binding = 0) readonly buffer Q4 { uvec4 q4_in[]; };
layout(std430, binding = 1) readonly buffer K4 { uvec4 k4_in[]; };
layout(std430, binding = 2) readonly buffer V4 { uvec4 v4_in[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer O4 { uvec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 6) writeonly buffer Stats { float stats_out[]; };  // (m, log2 l) per row

#include "ml/attention/flash_forward.push.h"
#include "ml/attention/flash_coopmat2.glsl"

shared float row_m[BR], row_l[BR], row_alpha[BR];

// Column 0 of the tile's row maxima updates its row: m_new = max(m, tile
// max) (NaN propagating), alpha = exp2((m - m_new) u), 0 while nothing was visible.
float update_max(const in uint r, const in uint c, const in float tile_max) {
  if (c == 0u) {
    const float m = row_m[r], m_new = max_of(m, tile_max);
    row_alpha[r] = m == -OA_INF ? 0.0 : exp2((m - m_new) * u);
    row_m[r] = m_new;
  }
  return tile_max;
}

// exp2((s - m) u), 0 for a hidden key.
float probability(const in uint r, const in uint c, const in float s) { return s == -OA_INF ? 0.0 : exp2((s - row_m[r]) * u); }

// Column 0 of the row sums of P updates its row's l.
float update_sum(const in uint r, const in uint c, const in float row_sum) {
  if (c == 0u) row_l[r] = fma(row_l[r], row_alpha[r], row_sum);
  return row_sum;
}

float rescaled(const in uint r, const in uint c, const in float o) { return o * row_alpha[r]; }

float normalized(const in uint r, const in uint c, const in float o) {
  const float l = row_l[r];
  return l == 0.0 ? 0.0 : o / l;
}

void main() {
  flash_tile_start(OA_GROUP_ID.x * BR, OA_GROUP_ID.y);
  const uint row_stride = pc.heads * D;
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads) / 8u, k_at = flash_row(bh, 0u, pc.sk, D, pc.heads) / 8u;
  const HEADS_LAYOUT tq = flash_heads_layout(pc.sq, row_stride), tk = flash_heads_layout(pc.sk, row_stride);
  for (uint r = gl_LocalInvocationID.x; r < BR; r += gl_WorkGroupSize.x) {
    row_m[r] = -OA_INF;
    row_l[r] = 0.0;
  }

  TILE(float16_t, BR, D, gl_MatrixUseA) q;
  coopMatLoadTensorNV(q, q4_in, q_at, sliceTensorLayoutNV(tq, row0, BR, 0, D));
  const TILE(float16_t, BC, BC, gl_MatrixUseB) ones = TILE(float16_t, BC, BC, gl_MatrixUseB)(1.0);

  // Keys [0, key_end) are visible to some row of the tile.
  uint key_end = pc.sk;
  if (pc.causal != 0u) key_end = uint(clamp(int(min(row0 + BR, pc.sq)) + pc.diag, 0, int(pc.sk)));
  // Tiles where every element is a visible key of an unmasked row skip the
  // element-wise logits (a negative scale flips every score).
  const bool whole_rows = !MASKED && pc.scale >= 0.0 && row0 + BR <= pc.sq;
  const int first_diagonal = int(row0) + pc.diag;  // the tile's first row sees keys up to here

  OUT o = OUT(0.0);
  for (col0 = 0u; col0 < key_end; col0 += BC) {
    TILE(float16_t, D, BC, gl_MatrixUseB) kt;
    coopMatLoadTensorNV(kt, k4_in, k_at, sliceTensorLayoutNV(tk, col0, BC, 0, D), flash_transposed());
    SCORES s = coopMatMulAdd(q, kt, SCORES(0.0));
    const bool inside = whole_rows && col0 + BC <= pc.sk && (pc.causal == 0u || int(col0 + BC) - 1 <= first_diagonal);
    if (!inside) coopMatPerElementNV(s, s, logit);

    SCORES tile_max;
    coopMatReduceNV(tile_max, s, gl_CooperativeMatrixReduceRowNV, max_of);
    barrier();  // the previous step's reads of the row values are done
    coopMatPerElementNV(tile_max, tile_max, update_max);
    barrier();
    SCORES p;
    coopMatPerElementNV(p, s, probability);
    const TILE(float16_t, BR, BC, gl_MatrixUseA) p16 = TILE(float16_t, BR, BC, gl_MatrixUseA)(p);
    SCORES row_sum = coopMatMulAdd(p16, ones, SCORES(0.0));
    coopMatPerElementNV(row_sum, row_sum, update_sum);
    coopMatPerElementNV(o, o, rescaled);
    TILE(float16_t, BC, D, gl_MatrixUseB) v;
    coopMatLoadTensorNV(v, v4_in, k_at, sliceTensorLayoutNV(tk, col0, BC, 0, D));
    o = coopMatMulAdd(p16, v, o);
  }

  barrier();
  coopMatPerElementNV(o, o, normalized);
  coopMatStoreTensorNV(TILE(float16_t, BR, D, gl_MatrixUseA)(o), o4_out, q_at, sliceTensorLayoutNV(tq, row0, BR, 0, D));
  // lse = m |scale| + ln l (m with a mask), stats (m, log2 l); -inf for rows that saw nothing.
  for (uint r = gl_LocalInvocationID.x; r < BR && row0 + r < pc.sq; r += gl_WorkGroupSize.x) {
    const float m = row_m[r], l = row_l[r];
    const uint at = bh * pc.sq + row0 + r;
    lse_out[at] = l == 0.0 ? -OA_INF : fma(m, MASKED ? 1.0 : scale_abs, log2(l) * OA_LN2);
    stats_out[2u * at] = l == 0.0 ? -OA_INF : m;
    stats_out[2u * at + 1u] = l == 0.0 ? -OA_INF : log2(l);
  }
}
