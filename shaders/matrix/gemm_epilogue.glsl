// GEMM epilogue over count = items * M * N outputs, 4 per invocation:
// C[item][r] = alpha * sum_{s < splits} W[s * count + item * MN + r] + beta * C[item][r] (+ bias[r % N]),
// with C read only when beta != 0. Sums the split-K partial products of
// matrix/gemm in a fixed order (deterministic); with splits = 0 it gives the
// K = 0 product, beta * C (+ bias).
//
// The body of matrix/gemm_epilogue (f32) and, with OA_GEMM_16 defined, of
// matrix/gemm_epilogue_half: W f32, C f16 or bf16 (rounded once, to nearest
// even), the bias f32 or C's dtype.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#ifdef OA_GEMM_16
#include "common/half_io.glsl"
#endif
layout(local_size_x = 256) in;
#ifdef OA_GEMM_16
// Dtype codes (common/half_io.glsl) of C (1 or 2) and of the bias (0 or C's).
layout(constant_id = 0) const uint C_DT = 1;
layout(constant_id = 1) const uint BIAS_DT = 0;
layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 1) buffer C { uint c[]; };
layout(std430, binding = 2) readonly buffer Bias { uint bias[]; };
#define OA_C(i) OA_LOAD_ANY(c, i, C_DT)
#define OA_SET_C(i, v) OA_STORE_ANY(c, i, v, C_DT)
#define OA_BIAS(i) OA_LOAD_ANY(bias, i, BIAS_DT)
#else
layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 1) buffer C { float c[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#define OA_C(i) c[i]
#define OA_SET_C(i, v) c[i] = v
#define OA_BIAS(i) bias[i]
#endif
#include "matrix/gemm_epilogue.push.h"

void main() {
  const uint e0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint q = 0u; q < 4u; ++q) {
    const uint e = e0 + q * 256u;
    if (e >= pc.count) return;
    float s = 0.0;
    for (uint p = 0u; p < pc.splits; ++p) s += w[pc.w_off + p * pc.count + e];
    const uint item = e / pc.MN, r = e % pc.MN, at = pc.c_off + item * pc.c_stride + r;
    float v = pc.alpha * s;
    if (pc.beta != 0.0) v += pc.beta * OA_C(at);
    if (pc.has_bias != 0u) v += OA_BIAS(pc.bias_off + r % pc.N);
    OA_SET_C(at, v);
  }
}
