#version 450
// Counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11): element
// i uses counter (i / 4, 0, 0, 0) with the 64-bit seed as key and takes lane
// i % 4, so values do not depend on the device or the launch shape.
// DIST 0: uniform [a, b); DIST 1: normal (mean a, stddev b) by Box-Muller over
// lanes (0,1) and (2,3); DIST 2: arange a + i * b.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DIST = 0;
layout(std430, binding = 0) writeonly buffer Out { float y[]; };
OA_PUSH_BEGIN uint n; uint base; uint seed_lo; uint seed_hi; float a; float b; OA_PUSH_END

uvec4 philox(uvec4 c, uvec2 k) {
  for (int r = 0; r < 10; ++r) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

float unit(uint v) { return float(v >> 8) * (1.0 / 16777216.0); }  // [0, 1)

void main() {
  uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  uint g = pc.base + i;
  if (DIST == 2u) { y[i] = pc.a + float(g) * pc.b; return; }
  uvec4 r = philox(uvec4(g / 4u, 0u, 0u, 0u), uvec2(pc.seed_lo, pc.seed_hi));
  uint lane = g % 4u;
  if (DIST == 0u) {
    y[i] = pc.a + (pc.b - pc.a) * unit(r[lane]);
  } else {
    uint p = lane & 2u;
    float u1 = 1.0 - unit(r[p]);  // (0, 1]
    float u2 = unit(r[p + 1u]);
    float rad = sqrt(-2.0 * log(u1));
    float z = (lane & 1u) == 0u ? rad * cos(6.283185307179586 * u2) : rad * sin(6.283185307179586 * u2);
    y[i] = pc.a + pc.b * z;
  }
}
