#version 450
// The epilogue of the split f32 GEMM (Engine::set_float32_matmul_precision(High)):
// C[i, j] = alpha * W[i, j] 2^-(ta[i] + tb[j]) + beta * C[i, j] (+ bias[j]),
// W the scaled product that the three f16 GEMMs summed and ta, tb the exponents
// of matrix/gemm_split (C read only when beta != 0). Where row i of op(A) or
// column j of op(B) holds inf or NaN (OA_SPLIT_NONFINITE), W is replaced by the
// FP32 dot product of the original operands, so inf and NaN propagate as in
// FP32. Four outputs an invocation, 256 invocations a workgroup.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "matrix/gemm_split.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TRANS_A = 0;
layout(constant_id = 1) const uint TRANS_B = 0;
layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer SA { int sa[]; };
layout(std430, binding = 2) readonly buffer SB { int sb[]; };
layout(std430, binding = 3) readonly buffer A { float a[]; };
layout(std430, binding = 4) readonly buffer B { float b[]; };
layout(std430, binding = 5) buffer C { float c[]; };
layout(std430, binding = 6) readonly buffer Bias { float bias[]; };
#include "matrix/gemm_split_epilogue.push.h"

void main() {
  const uint e0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x, MN = pc.M * pc.N;
  for (uint q = 0u; q < 4u; ++q) {
    const uint e = e0 + q * 256u;
    if (e >= pc.count) return;
    const uint item = e / MN, r = e % MN, i = r / pc.N, j = r % pc.N;
    const int ta = sa[pc.sa_off + item * pc.sa_stride + i], tb = sb[pc.sb_off + item * pc.sb_stride + j];
    float s = 0.0;
    if (ta == OA_SPLIT_NONFINITE || tb == OA_SPLIT_NONFINITE) {
      const uint ai = pc.a_off + item * pc.a_stride, bi = pc.b_off + item * pc.b_stride;
      for (uint k = 0u; k < pc.K; ++k)
        s += a[ai + (TRANS_A != 0u ? k * pc.M + i : i * pc.K + k)] * b[bi + (TRANS_B != 0u ? j * pc.K + k : k * pc.N + j)];
    } else {
      s = oa_scale_pow2(w[pc.w_off + item * pc.w_stride + i * pc.w_row + j], -(ta + tb));
    }
    float v = pc.alpha * s;
    if (pc.beta != 0.0) v += pc.beta * c[pc.c_off + item * pc.c_stride + r];
    if (pc.has_bias != 0u) v += bias[pc.bias_off + j];
    c[pc.c_off + item * pc.c_stride + r] = v;
  }
}
