#version 450
// Counter-based random numbers (Philox-4x32-10, common/philox.glsl): element i
// takes word i of the seed's stream, so values do not depend on the device or
// the launch shape.
// DIST 0: uniform [a, b); DIST 1: normal (mean a, stddev b) by Box-Muller over
// lanes (0,1) and (2,3); DIST 2: arange a + i * b.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/philox.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DIST = 0;
layout(std430, binding = 0) writeonly buffer Out { float y[]; };
#include "matrix/random.push.h"

void main() {
  uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  uint g = pc.base + i;
  if (DIST == 2u) { y[i] = pc.a + float(g) * pc.b; return; }
  uvec4 r = oa_philox(uvec4(g / 4u, 0u, 0u, 0u), uvec2(pc.seed_lo, pc.seed_hi));
  uint lane = g % 4u;
  if (DIST == 0u) {
    y[i] = pc.a + (pc.b - pc.a) * oa_unit_float(r[lane]);
  } else {
    uint p = lane & 2u;
    float u1 = 1.0 - oa_unit_float(r[p]);  // (0, 1]
    float u2 = oa_unit_float(r[p + 1u]);
    float rad = sqrt(-2.0 * log(u1));
    float z = (lane & 1u) == 0u ? rad * cos(6.283185307179586 * u2) : rad * sin(6.283185307179586 * u2);
    y[i] = pc.a + pc.b * z;
  }
}
