#version 450
// z = a (op) b elementwise. One operand may be broadcast: viewing the output
// as [outer, C, inner], the broadcast operand is a [C] vector indexed by
// (g / inner) % C, where g = base + i is the global element index.
// MODE 0: same shape; 1: b is broadcast; 2: a is broadcast. DT: the dtype of
// a, b and z, words as in matrix/unary.comp.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint DT = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer Z { uint z[]; };
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


void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x, per = DT == 0u ? 1u : 2u;
  for (uint k = 0u; k < 4u; ++k) {
    const uint w = w0 + k * 256u, i = w * per;
    if (i >= pc.n) return;
    const vec2 u = OPERAND(a, MODE == 2u, w, i), v = OPERAND(b, MODE == 1u, w, i);
    z[w] = oa_word_of(vec2(op(u.x, v.x), op(u.y, v.y)), i + 1u < pc.n, DT);
  }
}
