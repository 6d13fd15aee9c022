#version 450
// mask = a (OP) b elementwise as Bool (oa::matrix::eq, ne, lt, le, gt, ge):
// a and b f32 (i32 when INTS is 1) of one shape, or b the push value (SCALAR
// is 1; f32 a, or i32 a against the value's bits: 0.0 as 0). A NaN operand compares false under every OP but Ne (true), as
// IEEE 754 and PyTorch; the test reads the bits, so no fast-math rewrite of
// the float comparison can change it. Invocation p writes the Bool bytes
// (0 or 1) of elements 4p .. 4p + 3 as one word, so no 8-bit storage is
// needed; bytes past n are 0.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint INTS = 0;
layout(constant_id = 2) const uint SCALAR = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer Out { uint words[]; };
#include "matrix/compare.push.h"

bool is_nan(uint bits) { return (bits & 0x7fffffffu) > 0x7f800000u; }

bool compare_ints(int u, int v) {
  switch (OP) {
    case Eq: return u == v;
    case Ne: return u != v;
    case Lt: return u < v;
    case Le: return u <= v;
    case Gt: return u > v;
  }
  return u >= v;
}

bool compare_floats(uint ubits, uint vbits) {
  if (is_nan(ubits) || is_nan(vbits)) return OP == Ne;
  const float u = uintBitsToFloat(ubits), v = uintBitsToFloat(vbits);
  switch (OP) {
    case Eq: return u == v;
    case Ne: return u != v;
    case Lt: return u < v;
    case Le: return u <= v;
    case Gt: return u > v;
  }
  return u >= v;
}

void main() {
  const uint p = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, i0 = 4u * p;
  if (i0 >= pc.n) return;
  uint w = 0u;
  for (uint k = 0u; k < 4u && i0 + k < pc.n; ++k) {
    const uint u = a[i0 + k], v = SCALAR == 1u ? floatBitsToUint(pc.value) : b[i0 + k];
    const bool c = INTS == 1u ? compare_ints(int(u), int(v)) : compare_floats(u, v);
    if (c) w |= 1u << (8u * k);
  }
  words[p] = w;
}
