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
// BC at a time. The whole tile lives in workgroup-scope matrices, which the
// driver spreads over the workgroup's registers:
//   S = q k^T (f32 accumulators; k's rows loaded transposed), its logits and
//   hidden keys formed element by element (their row and column are known),
//   the row max by a row reduction, P = exp2((S - m) u), the row sums by a
//   row reduction, then o = alpha o + P v with P rounded to f16 and alpha (a
//   row's rescaling) spread over o's columns by a row reduction into a
//   BR x D matrix. The running max m and sum l are per-row matrices
//   (flash_coopmat2.glsl).
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

// exp2((s - m) u), 0 for a hidden key.
float probability(const in uint r, const in uint c, const in float s, const in float m) {
  return s == -OA_INF ? 0.0 : exp2((s - m) * u);
}

// A row's rescaling from its old max m to m_new: 0 while nothing was visible.
float rescale(const in uint r, const in uint c, const in float m, const in float m_new) {
  return m == -OA_INF ? 0.0 : exp2((m - m_new) * u);
}

float running_max(const in uint r, const in uint c, const in float m, const in float tile_max) { return max_of(m, tile_max); }

float normalized(const in uint r, const in uint c, const in float o, const in float l) { return l == 0.0 ? 0.0 : o / l; }

float row_lse(const in uint r, const in uint c, const in float m, const in float l) {
  return l == 0.0 ? -OA_INF : fma(m, MASKED ? 1.0 : scale_abs, log2(l) * OA_LN2);
}

float stats_max(const in uint r, const in uint c, const in float m, const in float l) { return l == 0.0 ? -OA_INF : m; }

float stats_log2_sum(const in uint r, const in uint c, const in float l) { return l == 0.0 ? -OA_INF : log2(l); }

void main() {
  flash_tile_start(OA_GROUP_ID.x * BR, OA_GROUP_ID.y);
  const uint row_stride = pc.heads * D;
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads) / 8u, k_at = flash_row(bh, 0u, pc.sk, D, pc.heads) / 8u;
  const HEADS_LAYOUT tq = flash_heads_layout(pc.sq, row_stride), tk = flash_heads_layout(pc.sk, row_stride);

  TILE(float16_t, BR, D, gl_MatrixUseA) q;
  coopMatLoadTensorNV(q, q4_in, q_at, sliceTensorLayoutNV(tq, row0, BR, 0, D));

  // Keys [0, key_end) are visible to some row of the tile.
  uint key_end = pc.sk;
  if (pc.causal != 0u) key_end = uint(clamp(int(min(row0 + BR, pc.sq)) + pc.diag, 0, int(pc.sk)));
  // Tiles where every element is a visible key of an unmasked row skip the
  // element-wise logits (a negative scale flips every score).
  const bool whole_rows = !MASKED && pc.scale >= 0.0 && row0 + BR <= pc.sq;
  const int first_diagonal = int(row0) + pc.diag;  // the tile's first row sees keys up to here

  SCORES m = SCORES(-OA_INF), l = SCORES(0.0);
  OUT o = OUT(0.0);
  for (col0 = 0u; col0 < key_end; col0 += BC) {
    TILE(float16_t, D, BC, gl_MatrixUseB) kt;
    coopMatLoadTensorNV(kt, k4_in, k_at, sliceTensorLayoutNV(tk, col0, BC, 0, D), flash_transposed());
    SCORES s = coopMatMulAdd(q, kt, SCORES(0.0));
    const bool inside = whole_rows && col0 + BC <= pc.sk && (pc.causal == 0u || int(col0 + BC) - 1 <= first_diagonal);
    if (!inside) coopMatPerElementNV(s, s, logit);

    SCORES tile_max, m_new, alpha, p, row_sum;
    coopMatReduceNV(tile_max, s, gl_CooperativeMatrixReduceRowNV, max_of);
    coopMatPerElementNV(m_new, m, running_max, tile_max);
    coopMatPerElementNV(alpha, m, rescale, m_new);
    m = m_new;
    coopMatPerElementNV(p, s, probability, m);
    coopMatReduceNV(row_sum, p, gl_CooperativeMatrixReduceRowNV, sum_of);
    l = l * alpha + row_sum;

    OUT alpha_rows;
    coopMatReduceNV(alpha_rows, alpha, gl_CooperativeMatrixReduceRowNV, max_of);
    o = o * alpha_rows;
    TILE(float16_t, BC, D, gl_MatrixUseB) v;
    coopMatLoadTensorNV(v, v4_in, k_at, sliceTensorLayoutNV(tk, col0, BC, 0, D));
    o = coopMatMulAdd(TILE(float16_t, BR, BC, gl_MatrixUseA)(p), v, o);
  }

  OUT l_rows;
  coopMatReduceNV(l_rows, l, gl_CooperativeMatrixReduceRowNV, max_of);
  coopMatPerElementNV(o, o, normalized, l_rows);
  coopMatStoreTensorNV(TILE(float16_t, BR, D, gl_MatrixUseA)(o), o4_out, q_at, sliceTensorLayoutNV(tq, row0, BR, 0, D));

  SCORES x;
  coopMatPerElementNV(x, m, row_lse, l);
  flash_store_rows(x, lse_out, pc.sq, 1u, 0u);
  coopMatPerElementNV(x, m, stats_max, l);
  flash_store_rows(x, stats_out, pc.sq, 2u, 0u);
  coopMatPerElementNV(x, l, stats_log2_sum);
  flash_store_rows(x, stats_out, pc.sq, 2u, 1u);
}
