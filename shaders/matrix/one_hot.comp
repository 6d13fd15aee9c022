#version 450
// y = one_hot(indices, classes) as f32 (oa::matrix::one_hot): element g of the
// [..., classes] result (this chunk's elements start at global element `base`)
// is 1 when indices[g / classes] == g % classes, else 0, so an index outside
// [0, classes) gives a row of zeros.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer I { int indices[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "matrix/one_hot.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    const uint g = pc.base + i;
    y[i] = indices[g / pc.classes] == int(g % pc.classes) ? 1.0 : 0.0;
  }
}
