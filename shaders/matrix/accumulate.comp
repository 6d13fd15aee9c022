#version 450
// y += x elementwise, in place: autograd's gradient accumulation into a buffer
// it owns. Each invocation handles 4 elements, 256 apart.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
#include "matrix/accumulate.push.h"

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i < pc.n) y[i] += x[i];
  }
}
