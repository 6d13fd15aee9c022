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
//   BR x D matrix. The running max m and sum l are BR x BC matrices whose
//   rows each hold one value. Loads and stores go through tensor layouts
//   that clamp rows past Sq or Sk (zeros in, nothing out).
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
#include "ml/attention/flash_layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D = 64;    // head dim = value dim, a multiple of 16
layout(constant_id = 2) const uint BR = 64;   // query rows per workgroup, a multiple of 16
layout(constant_id = 3) const uint BC = 64;   // keys per step, a multiple of 16
layout(constant_id = 4) const bool MASKED = false;

layout(std430, binding = 0) readonly buffer Q4 { uvec4 q4_in[]; };
layout(std430, binding = 1) readonly buffer K4 { uvec4 k4_in[]; };
layout(std430, binding = 2) readonly buffer V4 { uvec4 v4_in[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer O4 { uvec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 6) writeonly buffer Stats { float stats_out[]; };  // (m, log2 l) per row

#include "ml/attention/flash_forward.push.h"

#define TILE(T, R, C, USE) coopmat<T, gl_ScopeWorkgroup, R, C, USE>
#define SCORES TILE(float, BR, BC, gl_MatrixUseAccumulator)
#define OUT TILE(float, BR, D, gl_MatrixUseAccumulator)

// The tile's first query row and key, its batch-head and the score units.
uint row0, key0, bh;
float scale_abs, u;

float max_of(const in float a, const in float b) { return oa_max(a, b); }
float sum_of(const in float a, const in float b) { return a + b; }

// The logit of score s at tile element (r, c): sign(scale) s, or with a mask
// fma(sign(scale) s, |scale|, mask); -inf where the key is hidden (past Sk,
// after the row's causal diagonal, or a row past Sq).
float logit(const in uint r, const in uint c, const in float s) {
  const uint qi = row0 + r, key = key0 + c;
  int last = int(pc.sk) - 1;
  if (pc.causal != 0u) last = min(last, int(qi) + pc.diag);
  if (qi >= pc.sq || int(key) > last) return -OA_INF;
  const float x = pc.scale < 0.0 ? -s : s;
  return MASKED ? fma(x, scale_abs, mask[flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) + key]) : x;
}

// exp2((s - m) u), 0 for a hidden key.
float probability(const in uint r, const in uint c, const in float s, const in float m) {
  return s == -OA_INF ? 0.0 : exp2((s - m) * u);
}

// A row's rescaling from its old max m to m_new: 0 while nothing was visible.
float rescale(const in uint r, const in uint c, const in float m, const in float m_new) {
  return m == -OA_INF ? 0.0 : exp2((m - m_new) * u);
}

float running_max(const in uint r, const in uint c, const in float m, const in float tile_max) { return oa_max(m, tile_max); }

float normalized(const in uint r, const in uint c, const in float o, const in float l) { return l == 0.0 ? 0.0 : o / l; }

float row_lse(const in uint r, const in uint c, const in float m, const in float l) {
  return l == 0.0 ? -OA_INF : fma(m, MASKED ? 1.0 : scale_abs, log2(l) * OA_LN2);
}

float stats_max(const in uint r, const in uint c, const in float m, const in float l) { return l == 0.0 ? -OA_INF : m; }

float stats_log2_sum(const in uint r, const in uint c, const in float l) { return l == 0.0 ? -OA_INF : log2(l); }

// Column `col` of a per-row matrix (every column of a row holds the row's
// value) into element (bh, row, col) of a [BH, Sq, width] f32 buffer, rows
// past Sq dropped.
#define STORE_ROWS(X, BUF, width, col)                                                               \
  {                                                                                                  \
    tensorLayoutNV<3, gl_CooperativeMatrixClampModeConstantNV> t = createTensorLayoutNV(3, gl_CooperativeMatrixClampModeConstantNV); \
    t = setTensorLayoutDimensionNV(t, OA_NUM_GROUPS.y, pc.sq, width);                                \
    tensorViewNV<3, false> column = createTensorViewNV(3, false);                                    \
    column = setTensorViewClipNV(column, 0, BR, 0, 1);                                               \
    coopMatStoreTensorNV(X, BUF, 0, sliceTensorLayoutNV(t, bh, 1, row0, BR, col, 1), column);        \
  }

void main() {
  bh = OA_GROUP_ID.y;
  row0 = OA_GROUP_ID.x * BR;
  scale_abs = abs(pc.scale);
  u = MASKED ? OA_LOG2E : scale_abs * OA_LOG2E;

  // Every head as an [S, D] tensor of halves (rows heads * D apart when
  // packed) from its first element, in uvec4s of 8 halves.
  const uint row_stride = pc.heads * D;
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tq = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tq = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(tq, pc.sq, D), row_stride, 1);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> tk = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tk = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(tk, pc.sk, D), row_stride, 1);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads) / 8u, k_at = flash_row(bh, 0u, pc.sk, D, pc.heads) / 8u;

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
  for (key0 = 0u; key0 < key_end; key0 += BC) {
    TILE(float16_t, D, BC, gl_MatrixUseB) kt;
    coopMatLoadTensorNV(kt, k4_in, k_at, sliceTensorLayoutNV(tk, key0, BC, 0, D), transposed);
    SCORES s = coopMatMulAdd(q, kt, SCORES(0.0));
    const bool inside = whole_rows && key0 + BC <= pc.sk && (pc.causal == 0u || int(key0 + BC) - 1 <= first_diagonal);
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
    coopMatLoadTensorNV(v, v4_in, k_at, sliceTensorLayoutNV(tk, key0, BC, 0, D));
    o = coopMatMulAdd(TILE(float16_t, BR, BC, gl_MatrixUseA)(p), v, o);
  }

  OUT l_rows;
  coopMatReduceNV(l_rows, l, gl_CooperativeMatrixReduceRowNV, max_of);
  coopMatPerElementNV(o, o, normalized, l_rows);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> to = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  to = setTensorLayoutStrideNV(setTensorLayoutDimensionNV(to, pc.sq, D), row_stride, 1);
  coopMatStoreTensorNV(TILE(float16_t, BR, D, gl_MatrixUseAccumulator)(o), o4_out, q_at, sliceTensorLayoutNV(to, row0, BR, 0, D));

  SCORES x;
  coopMatPerElementNV(x, m, row_lse, l);
  STORE_ROWS(x, lse_out, 1u, 0u)
  coopMatPerElementNV(x, m, stats_max, l);
  STORE_ROWS(x, stats_out, 2u, 0u)
  coopMatPerElementNV(x, l, stats_log2_sum);
  STORE_ROWS(x, stats_out, 2u, 1u)
}
