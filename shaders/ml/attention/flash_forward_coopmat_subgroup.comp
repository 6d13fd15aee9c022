#version 450
// Flash attention forward on the tensor cores for f16 q, k, v with
// subgroup-scope 16 x 16 cooperative matrices, the softmax kept in registers
// by GL_NV_cooperative_matrix2's reductions, per-element operations and
// conversions (FlashAttention-2's work split). The problem, push constants
// and numerics are those of flash_forward.glsl (flash_common.glsl): raw
// scores s = sign(scale) q.k, base-2 online softmax with the running max in
// the same units, an additive mask forming the logit fma(s, |scale|, mask) in
// f32, NaN in a logit making its row NaN, rows with no visible key giving
// zeros and lse = -inf. The output is f16 (rounded once); lse and stats are
// f32, as flash_forward.glsl writes them unsplit.
//
// Specialization (flash_coopmat2.glsl): constant 0 the workgroup's
// invocations (BR / 16 subgroups of 32), 1 the head dim D (= value dim, a
// multiple of 16), 2 BR query rows per workgroup (a multiple of 16), 3 BC
// keys per step (a multiple of 16), 4 MASKED (an additive mask is bound).
//
// A workgroup owns BR query rows of one batch-head; subgroup w owns 16 of
// them, from row0: their q as D/16 f16 A-matrices and their output o as D/16
// f32 accumulators, in registers. The workgroup walks its visible keys BC at
// a time, each step's k and v rows staged once in shared memory for all its
// subgroups (flash_kv_tiles.glsl; the next step's rows read into registers
// meanwhile). Per step a subgroup
//  1. multiplies S = q k^T into BC/16 f32 accumulators (k's tile read
//     column-major is k^T), forming the logits element by element where a
//     row or key may be hidden, masked or the scale negative
//     (coopMatPerElementNV);
//  2. takes the step's row max: the element-wise max of the accumulators,
//     then one row reduction (coopMatReduceNV), which leaves each row's max in
//     every column of its row. The running max m and sum l are such
//     matrices too, so m_new = max(m, tile max), alpha = exp2((m - m_new) u)
//     (0 while nothing was visible) and o *= alpha are loops over matching
//     elements of matrices of one type;
//  3. forms P = exp2((S - m_new) u) (0 for a hidden key), rounded to f16 and
//     converted to A-matrices; l = alpha l + the row sums of that f16 P (the
//     weights P v takes) as P x ones on the tensor cores; o += P v (v's tile
//     as B-matrices).
// Tiles past every row's causal diagonal are not loaded; a subgroup skips
// the steps past its own rows' diagonal; steps wholly before it, with no key
// past Sk, no row past Sq, no mask and a positive scale, skip the element-wise
// logits. Finally o / l is stored as f16 and lse, stats per row through
// tensor layouts that drop rows past Sq.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
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

const uint THREADS = gl_WorkGroupSize.x;
const uint KV_ROWS = BC;
#include "ml/attention/flash_kv_tiles.glsl"

const uint DF = D / 16u;   // 16-column fragments of a head row
const uint NF = BC / 16u;  // 16-key fragments of a step

#define FRAGMENT(T, USE) coopmat<T, gl_ScopeSubgroup, 16, 16, USE>
#define ACC FRAGMENT(float, gl_MatrixUseAccumulator)

FRAGMENT(float16_t, gl_MatrixUseA) qf[DF];
ACC of[DF];

void main() {
  const uint block0 = OA_GROUP_ID.x * BR;
  flash_tile_start(block0 + 16u * gl_SubgroupID, OA_GROUP_ID.y);  // row0: this subgroup's first row
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads) / 8u;
  const HEADS_LAYOUT tq = flash_heads_layout(pc.sq, pc.heads * D);
  [[unroll]] for (uint c = 0u; c < DF; ++c) {
    FRAGMENT(float16_t, gl_MatrixUseA) q;  // glslang 15.1 fails on an array element as coopMatLoadTensorNV's matrix
    coopMatLoadTensorNV(q, q4_in, q_at, sliceTensorLayoutNV(tq, row0, 16u, c * 16u, 16u));
    qf[c] = q;
    of[c] = ACC(0.0);
  }

  // Keys [0, key_end) are visible to some row of the workgroup, keys up to
  // last_key to some row of this subgroup.
  uint key_end = pc.sk;
  int last_key = int(pc.sk) - 1;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(block0 + BR, pc.sq)) + pc.diag, 0, int(pc.sk)));
    last_key = min(last_key, int(min(row0 + 16u, pc.sq)) - 1 + pc.diag);
  }
  const bool live = row0 < pc.sq;
  const bool whole_rows = !MASKED && pc.scale >= 0.0 && row0 + 16u <= pc.sq;
  const int first_diagonal = int(row0) + pc.diag;  // the subgroup's first row sees keys up to here

  const FRAGMENT(float16_t, gl_MatrixUseB) ones = FRAGMENT(float16_t, gl_MatrixUseB)(1.0);
  ACC m = ACC(-OA_INF), l = ACC(0.0);
  if (key_end > 0u) load_kv(bh, 0u);
  for (uint key0 = 0u; key0 < key_end; key0 += BC) {
    barrier();
    store_kv();
    barrier();
    if (key0 + BC < key_end) load_kv(bh, key0 + BC);
    if (!live || int(key0) > last_key) continue;

    // 1. S = q k^T and its logits.
    ACC s[NF];
    [[unroll]] for (uint j = 0u; j < NF; ++j) {
      s[j] = ACC(0.0);
      [[unroll]] for (uint c = 0u; c < DF; ++c) {
        FRAGMENT(float16_t, gl_MatrixUseB) kf;
        coopMatLoad(kf, kv_tiles, (j * 16u * LD + c * 16u) / 8u, LD / 8u, gl_CooperativeMatrixLayoutColumnMajor);
        s[j] = coopMatMulAdd(qf[c], kf, s[j]);
      }
    }
    const bool inside = whole_rows && key0 + BC <= pc.sk && (pc.causal == 0u || int(key0 + BC) - 1 <= first_diagonal);
    if (!inside)
      [[unroll]] for (uint j = 0u; j < NF; ++j) {
        col0 = key0 + 16u * j;
        coopMatPerElementNV(s[j], s[j], logit);
      }

    // 2. The running max and the rescaling of l and o.
    ACC widest = s[0];
    [[unroll]] for (uint j = 1u; j < NF; ++j)
      [[unroll]] for (int i = 0; i < widest.length(); ++i) widest[i] = max_of(widest[i], s[j][i]);
    ACC tile_max;
    coopMatReduceNV(tile_max, widest, gl_CooperativeMatrixReduceRowNV, max_of);
    ACC alpha;
    [[unroll]] for (int i = 0; i < m.length(); ++i) {
      const float m_new = max_of(m[i], tile_max[i]);
      alpha[i] = m[i] == -OA_INF ? 0.0 : exp2((m[i] - m_new) * u);
      m[i] = m_new;
    }
    [[unroll]] for (uint c = 0u; c < DF; ++c)
      [[unroll]] for (int i = 0; i < alpha.length(); ++i) of[c][i] *= alpha[i];

    // 3. P in f16, its row sums and P v.
    ACC row_sum = ACC(0.0);
    [[unroll]] for (uint j = 0u; j < NF; ++j) {
      [[unroll]] for (int i = 0; i < m.length(); ++i) s[j][i] = s[j][i] == -OA_INF ? 0.0 : exp2((s[j][i] - m[i]) * u);
      const FRAGMENT(float16_t, gl_MatrixUseA) p = FRAGMENT(float16_t, gl_MatrixUseA)(s[j]);
      row_sum = coopMatMulAdd(p, ones, row_sum);
      [[unroll]] for (uint c = 0u; c < DF; ++c) {
        FRAGMENT(float16_t, gl_MatrixUseB) vf;
        coopMatLoad(vf, kv_tiles, TILE_WORDS + (j * 16u * LD + c * 16u) / 8u, LD / 8u, gl_CooperativeMatrixLayoutRowMajor);
        of[c] = coopMatMulAdd(p, vf, of[c]);
      }
    }
    [[unroll]] for (int i = 0; i < l.length(); ++i) l[i] = fma(l[i], alpha[i], row_sum[i]);
  }
  if (!live) return;

  // o / l (zeros where nothing was visible: l = 0) as f16.
  [[unroll]] for (uint c = 0u; c < DF; ++c) {
    [[unroll]] for (int i = 0; i < l.length(); ++i) of[c][i] = l[i] == 0.0 ? 0.0 : of[c][i] / l[i];
    coopMatStoreTensorNV(FRAGMENT(float16_t, gl_MatrixUseA)(of[c]), o4_out, q_at, sliceTensorLayoutNV(tq, row0, 16u, c * 16u, 16u));
  }
  // lse = m |scale| + ln l (m with a mask), stats (m, log2 l); -inf for rows that saw nothing.
  ACC lse, log2_l;
  [[unroll]] for (int i = 0; i < l.length(); ++i) {
    const bool none = l[i] == 0.0;
    log2_l[i] = none ? -OA_INF : log2(l[i]);
    lse[i] = none ? -OA_INF : fma(m[i], MASKED ? 1.0 : scale_abs, log2_l[i] * OA_LN2);
    m[i] = none ? -OA_INF : m[i];
  }
  flash_store_row_block(lse, lse_out, pc.sq, 1u, 0u, row0, 16u);
  flash_store_row_block(m, stats_out, pc.sq, 2u, 0u, row0, 16u);
  flash_store_row_block(log2_l, stats_out, pc.sq, 2u, 1u, row0, 16u);
}
