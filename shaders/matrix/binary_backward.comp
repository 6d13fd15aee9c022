#version 450
// Gradient of z = a (op) b with respect to one operand (WHICH 0: a, 1: b), at
// the output's shape; a broadcast operand's gradient is then summed back to
// its shape by the caller. OP and MODE number as in matrix/binary.comp (MODE
// 1: b is broadcast, 2: a is broadcast, indexed by (g / inner) % C). OP: 2 mul,
// 3 div, 4 maximum, 5 minimum, 6 pow, 8 remainder; ties of maximum/minimum split the gradient
// evenly, as torch.maximum / torch.minimum do. pow as torch.pow: d/da =
// b a^(b-1) (0 where b is 0), d/db = a^b log(a) (0 where a is 0 and b >= 0);
// remainder as torch.remainder: d/da = 1, d/db = -floor_divide(a, b).
// DT: the dtype of gy, a, b and the gradient (bound as y / y4), words and grid
// as in matrix/elementwise_quads.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const uint OP = 2;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint WHICH = 0;
layout(constant_id = 3) const uint DT = 0;
layout(std430, binding = 0) readonly buffer GY { uint gy[]; };
layout(std430, binding = 0) readonly buffer GY4 { uvec4 gy4[]; };
layout(std430, binding = 1) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 2) readonly buffer B { uint b[]; };
layout(std430, binding = 2) readonly buffer B4 { uvec4 b4[]; };
layout(std430, binding = 3) writeonly buffer G { uint y[]; };
layout(std430, binding = 3) writeonly buffer G4 { uvec4 y4[]; };
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
    case Remainder: return WHICH == 0u ? g : -g * oa_floor_divide(u, v);
  }
  return g;
}

// The broadcast operand is not read by word (binary_operands.glsl).
uvec4 input_quad(uint k, uint q) {
  if (k == 0u) return gy4[q];
  if (k == 1u && MODE != 2u) return a4[q];
  if (k == 2u && MODE != 1u) return b4[q];
  return uvec4(0u);
}

uint input_word(uint k, uint w) {
  if (k == 0u) return gy[w];
  if (k == 1u && MODE != 2u) return a[w];
  if (k == 2u && MODE != 1u) return b[w];
  return 0u;
}

uint result(uint w, uvec3 words) {
  const uint i = w * (DT == 0u ? 1u : 2u);
  const vec2 g = oa_word_values(words.x, DT), u = OPERAND(a, MODE == 2u, words.y, i), v = OPERAND(b, MODE == 1u, words.z, i);
  return oa_word_of(vec2(grad(g.x, u.x, v.x), grad(g.y, u.y, v.y)), i + 1u < pc.n, DT);
}

#include "matrix/elementwise_quads.glsl"
