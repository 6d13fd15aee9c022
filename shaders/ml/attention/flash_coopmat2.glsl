// Shared by the flash kernels on workgroup-scope tensor-core matrices
// (GL_NV_cooperative_matrix2; flash_forward_coopmat2.comp and the backward's
// flash_backward_{dq,dkv}_coopmat2.comp), f16 tensors, and by the forward
// on subgroup-scope ones (flash_forward_coopmat_subgroup.comp: its logits,
// row-value stores and heads layout). Include it after the
// kernel's push constants (the flash problem's members, pc) and its `mask`
// buffer. The numerics are flash_common.glsl's.
//
// A workgroup owns BR rows of one batch-head (queries; keys in the dk/dv
// pass) and walks the other operand BC rows at a time: a tile of scores is a
// BR x BC f32 matrix spread over the workgroup by the driver, whose elements
// are formed knowing their row and column (coopMatPerElementNV) and whose
// rows are reduced by coopMatReduceNV. In the backward a per-row value
// lives in a matrix whose rows each hold one value (the forward keeps its
// row values in shared memory). Heads are [S, D] tensors of halves from
// their first element (rows pc.heads * D apart when packed), read and
// written through tensor layouts that clamp rows past S (zeros in, nothing
// out).
#ifndef OA_FLASH_COOPMAT2_GLSL
#define OA_FLASH_COOPMAT2_GLSL
#include "ml/attention/flash_layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D = 64;   // head dim = value dim, a multiple of 16
layout(constant_id = 2) const uint BR = 64;  // rows per workgroup, a multiple of 16
layout(constant_id = 3) const uint BC = 64;  // rows of the other operand per step, a multiple of 16
layout(constant_id = 4) const bool MASKED = false;

#define TILE(T, R, C, USE) coopmat<T, gl_ScopeWorkgroup, R, C, USE>
#define SCORES TILE(float, BR, BC, gl_MatrixUseAccumulator)
#define OUT TILE(float, BR, D, gl_MatrixUseAccumulator)
#define HEADS_LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>

// The tile's first row, the step's first column (of the other operand), the
// batch-head, |scale| and the exponent's units u (flash_common.glsl).
uint row0, col0, bh;
float scale_abs, u;

void flash_tile_start(uint first_row, uint batch_head) {
  row0 = first_row;
  bh = batch_head;
  scale_abs = abs(pc.scale);
  u = MASKED ? OA_LOG2E : scale_abs * OA_LOG2E;
}

// max with NaN propagating (common/reduce.glsl's oa_max; that file's shared
// arrays would take from the memory the driver stages these matrices in).
float max_of(const in float a, const in float b) { return a > b || isnan(a) ? a : b; }
float sum_of(const in float a, const in float b) { return a + b; }

// The logit of raw score s = q.k of query qi and key `key`: sign(scale) s,
// or with a mask fma(sign(scale) s, |scale|, mask); -inf where the key is
// hidden (past Sk, after the query's causal diagonal, or a query past Sq).
float flash_logit(uint qi, uint key, float s) {
  int last = int(pc.sk) - 1;
  if (pc.causal != 0u) last = min(last, int(qi) + pc.diag);
  if (qi >= pc.sq || int(key) > last) return -OA_INF;
  const float x = pc.scale < 0.0 ? -s : s;
  return MASKED ? fma(x, scale_abs, mask[flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) + key]) : x;
}

// Query-major tiles (rows are queries, columns keys).
float logit(const in uint r, const in uint c, const in float s) { return flash_logit(row0 + r, col0 + c, s); }

// The backward's probability from the forward's stats: exp2((t - m) u -
// log2 l) for logit t, 0 for a hidden key or a row with nothing visible.
float stats_probability(float t, float m, float log2_l) { return t == -OA_INF || log2_l == -OA_INF ? 0.0 : exp2(fma(t - m, u, -log2_l)); }
float recomputed_probability(const in uint r, const in uint c, const in float s, const in float m, const in float log2_l) {
  return stats_probability(flash_logit(row0 + r, col0 + c, s), m, log2_l);
}
// The same on key-major tiles (the dk/dv pass: rows are keys, columns queries).
float recomputed_probability_t(const in uint r, const in uint c, const in float s, const in float m, const in float log2_l) {
  return stats_probability(flash_logit(col0 + c, row0 + r, s), m, log2_l);
}

// A head of `rows` rows, `row_stride` halves (or floats) apart.
HEADS_LAYOUT flash_heads_layout(uint rows, uint row_stride) {
  HEADS_LAYOUT t = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  return setTensorLayoutStrideNV(setTensorLayoutDimensionNV(t, rows, D), row_stride, 1);
}

// Reads a head's rows as the columns of a B matrix (k^T, v^T, dO^T).
tensorViewNV<2, false, 1, 0> flash_transposed() { return createTensorViewNV(2, false, 1, 0); }

// Per-row values of the tile's rows in f32 buffers [BH, S, width] (lse,
// stats, delta): column 0 of per-row matrix X into element (bh, row0 + r,
// col), rows past `rows` dropped (flash_store_row_block: of an n-row X
// from row `first` on); or every column of a row of X loaded from
// that element (0 past `rows`); or, for key-major tiles, every row of column
// c of X loaded from element (bh, col0 + c, col).
#define FLASH_ROWS_LAYOUT(rows, width)                                                                                             \
  setTensorLayoutDimensionNV(createTensorLayoutNV(3, gl_CooperativeMatrixClampModeConstantNV), OA_NUM_GROUPS.y, rows, width)
#define flash_store_row_block(X, BUF, rows, width, col, first, n)                                                                \
  coopMatStoreTensorNV(X, BUF, 0, sliceTensorLayoutNV(FLASH_ROWS_LAYOUT(rows, width), bh, 1, first, n, col, 1),                 \
                       setTensorViewClipNV(createTensorViewNV(3, false), 0, n, 0, 1))
#define flash_store_rows(X, BUF, rows, width, col) flash_store_row_block(X, BUF, rows, width, col, row0, BR)
#define flash_load_rows(X, BUF, rows, width, col)                                                                                \
  coopMatLoadTensorNV(X, BUF, 0, sliceTensorLayoutNV(FLASH_ROWS_LAYOUT(rows, width), bh, 1, row0, BR, col, 1),                  \
                      setTensorViewStrideNV(setTensorViewDimensionsNV(createTensorViewNV(2, true), BR, BC), 1, 0))
#define flash_load_columns(X, BUF, rows, width, col)                                                                             \
  coopMatLoadTensorNV(X, BUF, 0, sliceTensorLayoutNV(FLASH_ROWS_LAYOUT(rows, width), bh, 1, col0, BC, col, 1),                  \
                      setTensorViewStrideNV(setTensorViewDimensionsNV(createTensorViewNV(2, true), BR, BC), 0, 1))

#endif
