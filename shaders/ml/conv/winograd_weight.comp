#version 450
// Winograd F(2x2, 3x3) weight transform (Lavin & Gray 2016): U = G g G^T for
// the 3x3 kernel g of reduction channel ch and output channel k, with G =
// [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. Writes u[(xi * c + ch) * k_pad +
// k] for xi = 4 * row + column of U, so that each xi is a [c, k_pad] GEMM
// operand; channels past `k` are zero. Invocation: x = output channel,
// workgroup y = reduction channel.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Weight { float weight[]; };
layout(std430, binding = 1) writeonly buffer U { float u[]; };
#include "ml/conv/winograd.push.h"

float tap(uint base, uint i) { return weight[base + (pc.flip != 0u ? 8u - i : i)]; }

void main() {
  const uint k = OA_GROUP_ID.x * 64u + gl_LocalInvocationID.x;
  const uint ch = OA_GROUP_ID.y;
  if (k >= pc.k_pad) return;
  vec3 g0 = vec3(0.0), g1 = vec3(0.0), g2 = vec3(0.0);
  if (k < pc.k) {
    const uint base = k * pc.wk_stride + ch * pc.wc_stride;
    g0 = vec3(tap(base, 0u), tap(base, 1u), tap(base, 2u));
    g1 = vec3(tap(base, 3u), tap(base, 4u), tap(base, 5u));
    g2 = vec3(tap(base, 6u), tap(base, 7u), tap(base, 8u));
  }
  // G g (rows), then (G g) G^T (columns).
  const vec3 q[4] = vec3[4](g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2);
  const uint plane = pc.c * pc.k_pad;
  uint at = ch * pc.k_pad + k;
  [[unroll]] for (uint a = 0u; a < 4u; ++a) {
    const vec3 r = q[a];
    u[at] = r.x;
    u[at + plane] = 0.5 * (r.x + r.y + r.z);
    u[at + 2u * plane] = 0.5 * (r.x - r.y + r.z);
    u[at + 3u * plane] = r.z;
    at += 4u * plane;
  }
}
