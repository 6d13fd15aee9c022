#version 450
// z = a (op) b elementwise. One operand may be broadcast: viewing the output
// as [outer, C, inner], the broadcast operand is a [C] vector indexed by
// (g / inner) % C, where g = base + i is the global element index.
// MODE 0: same shape; 1: b is broadcast; 2: a is broadcast. DT: the dtype of
// a, b and z (bound as y / y4), words and grid as in matrix/elementwise_quads.glsl;
// DT 3 (i32) takes add, sub, mul, max and min in int32 arithmetic (add, sub
// and mul wrap modulo 2^32).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint DT = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(std430, binding = 2) writeonly buffer Z { uint y[]; };
layout(std430, binding = 2) writeonly buffer Z4 { uvec4 y4[]; };
#include "matrix/binary.push.h"
#include "matrix/binary_operands.glsl"

float op(float u, float v) {
  switch (OP) {
    case Add: return u + v;
    case Sub: return u - v;
    case Mul: return u * v;
    case Div: return u / v;
    case Max: return max(u, v);
    case Min: return min(u, v);
    case Pow: return oa_pow(u, v);
  }
  return u;
}

int iop(int u, int v) {
  switch (OP) {
    case Add: return u + v;
    case Sub: return u - v;
    case Mul: return u * v;
    case Max: return max(u, v);
    case Min: return min(u, v);
  }
  return u;
}

// The broadcast operand is not read by word (binary_operands.glsl).
uvec4 input_quad(uint k, uint q) {
  if (k == 0u && MODE != 2u) return a4[q];
  if (k == 1u && MODE != 1u) return b4[q];
  return uvec4(0u);
}

uint input_word(uint k, uint w) {
  if (k == 0u && MODE != 2u) return a[w];
  if (k == 1u && MODE != 1u) return b[w];
  return 0u;
}

uint result(uint w, uvec3 words) {
  if (DT == 3u) return uint(iop(int(MODE == 2u ? a[channel(w)] : words.x), int(MODE == 1u ? b[channel(w)] : words.y)));
  const uint i = w * (DT == 0u ? 1u : 2u);
  const vec2 u = OPERAND(a, MODE == 2u, words.x, i), v = OPERAND(b, MODE == 1u, words.y, i);
  return oa_word_of(vec2(op(u.x, v.x), op(u.y, v.y)), i + 1u < pc.n, DT);
}

#include "matrix/elementwise_quads.glsl"
