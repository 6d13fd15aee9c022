#version 450
// Gradient of z = a (op) b with respect to one operand (WHICH 0: a, 1: b), at
// the output's shape; a broadcast operand's gradient is then summed back to
// its shape by the caller. OP and MODE number as in matrix/binary.comp (MODE
// 1: b is broadcast, 2: a is broadcast, indexed by (g / inner) % C). OP: 2 mul,
// 3 div, 4 maximum, 5 minimum, 6 pow; ties of maximum/minimum split the gradient
// evenly, as torch.maximum / torch.minimum do. pow as torch.pow: d/da =
// b a^(b-1) (0 where b is 0), d/db = a^b log(a) (0 where a is 0 and b >= 0).
// DT: the dtype of gy, a, b and the gradient, words as in matrix/unary.comp.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 2;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint WHICH = 0;
layout(constant_id = 3) const uint DT = 0;
layout(std430, binding = 0) readonly buffer GY { uint gy[]; };
layout(std430, binding = 1) readonly buffer A { uint a[]; };
layout(std430, binding = 2) readonly buffer B { uint b[]; };
layout(std430, binding = 3) writeonly buffer G { uint g_out[]; };
#include "matrix/binary.push.h"
#include "matrix/binary_operands.glsl"

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
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x, per = DT == 0u ? 1u : 2u;
  for (uint k = 0u; k < 4u; ++k) {
    const uint w = w0 + k * 256u, i = w * per;
    if (i >= pc.n) return;
    const vec2 g = oa_word_values(gy[w], DT), u = OPERAND(a, MODE == 2u, w, i), v = OPERAND(b, MODE == 1u, w, i);
    g_out[w] = oa_word_of(vec2(grad(g.x, u.x, v.x), grad(g.y, u.y, v.y)), i + 1u < pc.n, DT);
  }
}
