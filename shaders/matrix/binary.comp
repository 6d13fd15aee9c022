#version 450
// z = a (op) b elementwise. One operand may be broadcast: viewing the output
// as [outer, C, inner], the broadcast operand is a [C] vector indexed by
// (g / inner) % C, where g = base + i is the global element index.
// MODE 0: same shape; 1: b is broadcast; 2: a is broadcast.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Z { float z[]; };
#include "matrix/binary.push.h"

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
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    uint c = ((pc.base + i) / pc.inner) % pc.channels;
    float u = MODE == 2u ? a[c] : a[i];
    float v = MODE == 1u ? b[c] : b[i];
    z[i] = op(u, v);
  }
}
