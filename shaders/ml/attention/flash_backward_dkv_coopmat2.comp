#version 450
// Flash attention backward on workgroup-scope tensor-core matrices
// (GL_NV_cooperative_matrix2), f16 q, k, v and dO; pass 2 of 2: dk and dv
// (f32), from the forward's stats (m, log2 l) and pass 1's delta. The
// numerics are those of flash_backward_dkv.glsl (flash_common.glsl): per
// visible pair p = exp2((t - m) u - log2 l) for logit t, dv += p dO,
// ds = p (dO . v - delta), dk += ds q; finally dk *= scale. p and ds are
// rounded to f16 before their products (as FlashAttention-2's fp16
// backward), every product accumulates in f32.
//
// A workgroup owns BR key rows of one batch-head and walks the queries that
// can see them BC at a time, on key-major tiles (rows are keys, columns
// queries): S^T = k q^T and dP^T = v dO^T (q and dO loaded transposed), then
// P^T and dS^T element by element with each column's m, log2 l and delta,
// dv += P^T dO and dk += dS^T q (flash_coopmat2.glsl).
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
layout(std430, binding = 4) readonly buffer DO4 { uvec4 do4_in[]; };
layout(std430, binding = 5) readonly buffer Stats { float stats_in[]; };  // (m, log2 l) per query
layout(std430, binding = 6) readonly buffer Delta { float delta_in[]; };
layout(std430, binding = 7) writeonly buffer DK { float dk_out[]; };
layout(std430, binding = 8) writeonly buffer DV { float dv_out[]; };

#include "ml/attention/flash_backward_dkv.push.h"
#include "ml/attention/flash_coopmat2.glsl"

void main() {
  flash_tile_start(OA_GROUP_ID.x * BR, OA_GROUP_ID.y);
  const uint row_stride = pc.heads * D;
  // Element offsets of the heads' first rows (in uvec4s of 8 halves for the 16-bit tensors).
  const uint q_at = flash_row(bh, 0u, pc.sq, D, pc.heads), k_at = flash_row(bh, 0u, pc.sk, D, pc.heads);
  const HEADS_LAYOUT tq = flash_heads_layout(pc.sq, row_stride), tk = flash_heads_layout(pc.sk, row_stride);

  TILE(float16_t, BR, D, gl_MatrixUseA) k, v;
  coopMatLoadTensorNV(k, k4_in, k_at / 8u, sliceTensorLayoutNV(tk, row0, BR, 0, D));
  coopMatLoadTensorNV(v, v4_in, k_at / 8u, sliceTensorLayoutNV(tk, row0, BR, 0, D));

  // Query i sees key j when j <= i + diag: with causality the first query
  // that sees the tile's first key, from the start of its step.
  uint first_query = 0u;
  if (pc.causal != 0u) first_query = uint(max(int(row0) - pc.diag, 0)) / BC * BC;
  OUT dk = OUT(0.0), dv = OUT(0.0);
  for (col0 = first_query; col0 < pc.sq; col0 += BC) {
    TILE(float16_t, D, BC, gl_MatrixUseB) qt, gt;
    coopMatLoadTensorNV(qt, q4_in, q_at / 8u, sliceTensorLayoutNV(tq, col0, BC, 0, D), flash_transposed());
    coopMatLoadTensorNV(gt, do4_in, q_at / 8u, sliceTensorLayoutNV(tq, col0, BC, 0, D), flash_transposed());
    SCORES m, log2_l, delta;
    flash_load_columns(m, stats_in, pc.sq, 2u, 0u);
    flash_load_columns(log2_l, stats_in, pc.sq, 2u, 1u);
    flash_load_columns(delta, delta_in, pc.sq, 1u, 0u);
    SCORES p = coopMatMulAdd(k, qt, SCORES(0.0));
    coopMatPerElementNV(p, p, recomputed_probability_t, m, log2_l);
    TILE(float16_t, BC, D, gl_MatrixUseB) g, q;
    coopMatLoadTensorNV(g, do4_in, q_at / 8u, sliceTensorLayoutNV(tq, col0, BC, 0, D));
    dv = coopMatMulAdd(TILE(float16_t, BR, BC, gl_MatrixUseA)(p), g, dv);
    SCORES ds = coopMatMulAdd(v, gt, SCORES(0.0));
    ds = p * (ds - delta);
    coopMatLoadTensorNV(q, q4_in, q_at / 8u, sliceTensorLayoutNV(tq, col0, BC, 0, D));
    dk = coopMatMulAdd(TILE(float16_t, BR, BC, gl_MatrixUseA)(ds), q, dk);
  }
  dk = dk * pc.scale;
  coopMatStoreTensorNV(dk, dk_out, k_at, sliceTensorLayoutNV(tk, row0, BR, 0, D));
  coopMatStoreTensorNV(dv, dv_out, k_at, sliceTensorLayoutNV(tk, row0, BR, 0, D));
}
