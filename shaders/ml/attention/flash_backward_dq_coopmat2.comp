#version 450
// Flash attention backward on workgroup-scope tensor-core matrices
// (GL_NV_cooperative_matrix2), f16 q, k, v, O and dO; pass 1 of 2: dq (f32)
// and delta = rowsum(dO * O) - g_lse (g_lse: the gradient reaching the
// log-sum-exp output, when has_lse_grad). The numerics are those of
// flash_backward_dq.glsl (flash_common.glsl): a probability is recomputed
// from the forward's stats (m, log2 l) as p = exp2((s - m) u - log2 l) with s
// the logit (sign(scale) q.k, or fma(that, |scale|, mask)), then
// ds = p (dO . v - delta) and dq = scale * sum_j ds_j k_j; rows with nothing
// visible (log2 l = -inf) get dq = 0. ds is rounded to f16 before ds k (as
// FlashAttention-2's fp16 backward), every product accumulates in f32.
//
// A workgroup owns BR query rows of one batch-head and walks the keys they
// see BC at a time: S = q k^T and dP = dO v^T (k and v loaded transposed),
// P and dS element by element, dq += dS k. Per-row values (m, log2 l, delta)
// are BR x BC matrices whose rows each hold one value.
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
layout(std430, binding = 4) readonly buffer O4 { uvec4 o4_in[]; };
layout(std430, binding = 5) readonly buffer DO4 { uvec4 do4_in[]; };
layout(std430, binding = 6) readonly buffer Stats { float stats_in[]; };  // (m, log2 l) per row
layout(std430, binding = 7) writeonly buffer DQ { float dq_out[]; };
layout(std430, binding = 8) writeonly buffer Delta { float delta_out[]; };
layout(std430, binding = 9) readonly buffer LseGrad { float lse_grad[]; };

#include "ml/attention/flash_backward_dq.push.h"
#include "ml/attention/flash_coopmat2.glsl"

void main() {
  flash_tile_start(OA_GROUP_ID.x * BR, OA_GROUP_ID.y);
  const uint row_stride = pc.heads * D;
  // Element offsets of the heads' first rows (in uvec4s of 8 halves for the 16-bit tensors).
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads), k_at = flash_row(bh, 0u, pc.sk, D, pc.heads);
  const HEADS_LAYOUT tq = flash_heads_layout(pc.sq, row_stride), tk = flash_heads_layout(pc.sk, row_stride);

  TILE(float16_t, BR, D, gl_MatrixUseA) q, g;
  coopMatLoadTensorNV(q, q4_in, q_at / 8u, sliceTensorLayoutNV(tq, row0, BR, 0, D));
  coopMatLoadTensorNV(g, do4_in, q_at / 8u, sliceTensorLayoutNV(tq, row0, BR, 0, D));

  // delta = rowsum(dO * O) - g_lse, in f32.
  TILE(float16_t, BR, D, gl_MatrixUseAccumulator) o16, g16;
  coopMatLoadTensorNV(o16, o4_in, q_at / 8u, sliceTensorLayoutNV(tq, row0, BR, 0, D));
  coopMatLoadTensorNV(g16, do4_in, q_at / 8u, sliceTensorLayoutNV(tq, row0, BR, 0, D));
  SCORES delta;
  coopMatReduceNV(delta, OUT(o16) * OUT(g16), gl_CooperativeMatrixReduceRowNV, sum_of);
  if (pc.has_lse_grad != 0u) {
    SCORES g_lse;
    flash_load_rows(g_lse, lse_grad, pc.sq, 1u, 0u);
    delta = delta - g_lse;
  }
  flash_store_rows(delta, delta_out, pc.sq, 1u, 0u);

  SCORES m, log2_l;
  flash_load_rows(m, stats_in, pc.sq, 2u, 0u);
  flash_load_rows(log2_l, stats_in, pc.sq, 2u, 1u);

  uint key_end = pc.sk;
  if (pc.causal != 0u) key_end = uint(clamp(int(min(row0 + BR, pc.sq)) + pc.diag, 0, int(pc.sk)));
  OUT dq = OUT(0.0);
  for (col0 = 0u; col0 < key_end; col0 += BC) {
    TILE(float16_t, D, BC, gl_MatrixUseB) kt, vt;
    coopMatLoadTensorNV(kt, k4_in, k_at / 8u, sliceTensorLayoutNV(tk, col0, BC, 0, D), flash_transposed());
    coopMatLoadTensorNV(vt, v4_in, k_at / 8u, sliceTensorLayoutNV(tk, col0, BC, 0, D), flash_transposed());
    SCORES p = coopMatMulAdd(q, kt, SCORES(0.0));
    coopMatPerElementNV(p, p, recomputed_probability, m, log2_l);
    SCORES ds = coopMatMulAdd(g, vt, SCORES(0.0));
    ds = p * (ds - delta);
    TILE(float16_t, BC, D, gl_MatrixUseB) k;
    coopMatLoadTensorNV(k, k4_in, k_at / 8u, sliceTensorLayoutNV(tk, col0, BC, 0, D));
    dq = coopMatMulAdd(TILE(float16_t, BR, BC, gl_MatrixUseA)(ds), k, dq);
  }
  dq = dq * pc.scale;
  coopMatStoreTensorNV(dq, dq_out, q_at, sliceTensorLayoutNV(flash_heads_layout(pc.sq, row_stride), row0, BR, 0, D));
}
