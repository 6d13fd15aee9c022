// The operand buffers, their element access and the push constants shared by
// the GEMM kernels (matrix/gemm.glsl, matrix/gemm_skinny.glsl,
// matrix/gemm_coopmat.glsl), bound as the host binds them: 0 A, 1 B, 2 C,
// 3 the bias. A and B are each bound twice, by element (a1, b1) and by quad
// (a4, b4). The element types:
// - f32 (the default): every buffer float, a quad a vec4;
// - OA_GEMM_16: every buffer 32-bit words, A and B f16 or bf16 (dtype code
//   IN_DT), C and the bias f32 or A's dtype (C_DT, BIAS_DT), a quad four
//   16-bit elements (uvec2), accessed through common/half_io.glsl;
// - OA_GEMM_PACKED_AB (matrix/gemm_coopmat.glsl): A and B 16-bit patterns in
//   uint words, a quad eight halves (uvec4) used as stored; C and the bias
//   32-bit words of dtype codes C_DT and BIAS_DT (f32, or A's 16-bit dtype).
// OA_A1(i) / OA_B1(i) read element i of A / B as a float, OA_A4(q) / OA_B4(q)
// quad q as a vec4 (not with OA_GEMM_PACKED_AB); OA_C1, OA_SET_C1 and OA_BIAS
// read and write C and read the bias by element.
#ifndef OA_GEMM_OPERANDS_GLSL
#define OA_GEMM_OPERANDS_GLSL

#if defined(OA_GEMM_16)
#include "common/half_io.glsl"
#define OA_GEMM_AB uint
#define OA_GEMM_AB_QUAD uvec2
#define OA_GEMM_C uint
#define OA_A1(i) oa_half_at(a1[(i) >> 1], (i), IN_DT)
#define OA_A4(q) oa_half_quad(a4[q], IN_DT)
#define OA_B1(i) oa_half_at(b1[(i) >> 1], (i), IN_DT)
#define OA_B4(q) oa_half_quad(b4[q], IN_DT)
#define OA_C1(i) OA_LOAD_ANY(c1, i, C_DT)
#define OA_SET_C1(i, v) OA_STORE_ANY(c1, i, v, C_DT)
#define OA_BIAS(i) OA_LOAD_ANY(bias, i, BIAS_DT)
#elif defined(OA_GEMM_PACKED_AB)
#include "common/half_io.glsl"
#define OA_GEMM_AB uint
#define OA_GEMM_AB_QUAD uvec4
#define OA_GEMM_C uint
#define OA_C1(i) OA_LOAD_ANY(c1, i, C_DT)
#define OA_SET_C1(i, v) OA_STORE_ANY(c1, i, v, C_DT)
#define OA_BIAS(i) OA_LOAD_ANY(bias, i, BIAS_DT)
#else
#define OA_GEMM_AB float
#define OA_GEMM_AB_QUAD vec4
#define OA_A1(i) a1[i]
#define OA_A4(q) a4[q]
#define OA_B1(i) b1[i]
#define OA_B4(q) b4[q]
#define OA_GEMM_C float
#define OA_C1(i) c1[i]
#define OA_SET_C1(i, v) c1[i] = v
#define OA_BIAS(i) bias[i]
#endif

layout(std430, binding = 0) readonly buffer A1 { OA_GEMM_AB a1[]; };
layout(std430, binding = 0) readonly buffer A4 { OA_GEMM_AB_QUAD a4[]; };
layout(std430, binding = 1) readonly buffer B1 { OA_GEMM_AB b1[]; };
layout(std430, binding = 1) readonly buffer B4 { OA_GEMM_AB_QUAD b4[]; };
layout(std430, binding = 2) buffer C1 { OA_GEMM_C c1[]; };
#if defined(OA_GEMM_PACKED_AB)
layout(std430, binding = 2) buffer C4 { uvec4 c4[]; };  // a 16-bit C, 8 elements a quad
#endif
layout(std430, binding = 3) readonly buffer Bias { OA_GEMM_C bias[]; };

// An includer that declares a push block of its own (the part
// matrix_gemm_problem, then fields of its own) defines OA_GEMM_OWN_PUSH.
#ifndef OA_GEMM_OWN_PUSH
#include "matrix/gemm.push.h"
#endif

// This workgroup's K range [kbeg, kend) and the bases of A and B: batch
// item OA_GROUP_ID.z / splits, K split s = OA_GROUP_ID.z % splits over
// [s * kchunk, min(K, (s + 1) * kchunk)).
uint kend, abase, bbase;

// Sets kend, abase and bbase; returns kbeg.
uint gemm_split_begin() {
  const uint z = OA_GROUP_ID.z, item = z / pc.splits, split = z % pc.splits;
  const uint kbeg = split * pc.kchunk;
  kend = min(pc.K, kbeg + pc.kchunk);
  abase = pc.a_off + item * pc.a_stride;
  bbase = pc.b_off + item * pc.b_stride;
  return kbeg;
}

// The base of this workgroup's C: its batch item's split-s slice. A
// function rather than a variable set with the others, so that kernels form
// it after their K loop, not holding a register through it (the skinny
// kernel at M = 8 ran 10% slower on the H200 with it held).
uint gemm_c_base() {
  const uint z = OA_GROUP_ID.z;
  return pc.c_off + (z / pc.splits) * pc.c_stride + (z % pc.splits) * pc.c_split_stride;
}

// Element at of C from the scaled product r: r (+ beta * C) (+ bias[bias_off + n]); n is the
// element's column (its row where matrix/gemm_coopmat.glsl's OA_GEMM_ROW_BIAS is defined).
void store_c1(uint at, uint n, float r) {
  if (pc.beta != 0.0) r += pc.beta * OA_C1(at);
  if (pc.has_bias != 0u) r += OA_BIAS(pc.bias_off + n);
  OA_SET_C1(at, r);
}

#endif
