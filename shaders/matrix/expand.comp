#version 450
// out = scale * v broadcast to the output's shape: viewing the output as
// [outer, C, inner], element g = base + i reads v[(g / inner) % C] (the
// indexing of a broadcast operand in matrix/binary.comp). The backward of
// sum, mean and sum_to.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer V { float v[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
#include "matrix/expand.push.h"

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    y[i] = pc.scale * v[((pc.base + i) / pc.inner) % pc.channels];
  }
}
