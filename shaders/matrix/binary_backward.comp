#version 450
// Gradient of z = a (op) b with respect to one operand (WHICH 0: a, 1: b), at
// the output's shape; a broadcast operand's gradient is then summed back to
// its shape by the caller. OP and MODE number as in matrix/binary.comp (MODE
// 1: b is broadcast, 2: a is broadcast, indexed by (g / inner) % C). OP: 2 mul,
// 3 div, 4 maximum, 5 minimum, 6 pow; ties of maximum/minimum split the gradient
// evenly, as torch.maximum / torch.minimum do. pow as torch.pow: d/da =
// b a^(b-1) (0 where b is 0), d/db = a^b log(a) (0 where a is 0 and b >= 0).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 2;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint WHICH = 0;
layout(std430, binding = 0) readonly buffer GY { float gy[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) writeonly buffer G { float g_out[]; };
#include "matrix/binary.push.h"

// 1 when this operand is the one selected, 1/2 on a tie, else 0.
float pick(bool wins, bool tie) { return wins ? 1.0 : (tie ? 0.5 : 0.0); }

float grad(float g, float u, float v) {
  switch (OP) {
    case Mul: return WHICH == 0u ? g * v : g * u;
    case Div: return WHICH == 0u ? g / v : -g * u / (v * v);
    case Max: return g * (WHICH == 0u ? pick(u > v, u == v) : pick(v > u, u == v));
    case Min: return g * (WHICH == 0u ? pick(u < v, u == v) : pick(v < u, u == v));
    case Pow:
      if (WHICH == 0u) return v == 0.0 ? 0.0 : g * v * oa_pow(u, v - 1.0);
      return u == 0.0 && v >= 0.0 ? 0.0 : g * oa_pow(u, v) * log(u);
  }
  return g;
}

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    uint c = ((pc.base + i) / pc.inner) % pc.channels;
    float u = MODE == 2u ? a[c] : a[i];
    float v = MODE == 1u ? b[c] : b[i];
    g_out[i] = grad(gy[i], u, v);
  }
}
