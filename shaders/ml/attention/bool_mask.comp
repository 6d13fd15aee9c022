#version 450
// Additive mask from a boolean one (torch's bool attn_mask: true = attend):
// y[i] = 0 where mask byte i is nonzero, -inf where it is 0. The bool mask is
// read as uint words (4 bytes each, little-endian byte order) by shifts, so no
// 8-bit storage feature is needed. Each invocation writes 4 elements.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Mask { uint words[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
#include "ml/attention/bool_mask.push.h"

void main() {
  const uint w = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (w * 4u >= pc.n) return;
  const uint bits = words[w];
  for (uint b = 0u; b < 4u; ++b) {
    const uint i = w * 4u + b;
    if (i < pc.n) y[i] = ((bits >> (8u * b)) & 0xffu) != 0u ? 0.0 : -OA_INF;
  }
}
