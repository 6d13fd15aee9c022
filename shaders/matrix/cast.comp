#version 450
// y = x converted between dtypes (oa::matrix::cast): FROM and TO are 0 (f32),
// 1 (f16) or 2 (bf16), never equal. f16 <-> bf16 widens to f32 (exactly) and
// narrows once. Invocation p converts elements 2p and 2p + 1: one 32-bit word
// of a 16-bit side, two words of an f32 side. A 16-bit storage is whole words,
// so the last word of an odd count gets a zero high half.
// The conversions are integer arithmetic (common/half.glsl), not
// packHalf2x16 / unpackHalf2x16: GLSL leaves their rounding and subnormal
// handling to the implementation. (lavapipe's happen to pass the same tests,
// ties to even and subnormals included.)
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint FROM = 0;
layout(constant_id = 1) const uint TO = 1;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
#include "matrix/cast.push.h"

uint widen(uint h) { return FROM == 1u ? oa_f32_from_f16(h) : oa_f32_from_bf16(h); }
uint narrow(uint x) { return TO == 1u ? oa_f16_from_f32(x) : oa_bf16_from_f32(x); }

void main() {
  const uint p = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, i = 2u * p;
  if (i >= pc.n) return;
  const bool pair = i + 1u < pc.n;
  uint a, b;  // the f32 bits of elements i and i + 1
  if (FROM == 0u) {
    a = src[i];
    b = pair ? src[i + 1u] : 0u;
  } else {
    const uint w = src[p];
    a = widen(w & 0xffffu);
    b = widen(w >> 16);
  }
  if (TO == 0u) {
    dst[i] = a;
    if (pair) dst[i + 1u] = b;
  } else {
    dst[p] = narrow(a) | (pair ? narrow(b) << 16 : 0u);
  }
}
