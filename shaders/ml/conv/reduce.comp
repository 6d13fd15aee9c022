#version 450
// Sums `splits` partial results laid `count` floats apart, in split order
// (deterministic): out[i] = sum_s part[s * count + i]. The split count is small
// (the conv lowerings cap it), so each invocation sums one column of it.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };
#include "ml/conv/reduce.push.h"

void main() {
  const uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (i >= pc.count) return;
  float s = 0.0;
  for (uint k = 0u; k < pc.splits; ++k) s += part[k * pc.count + i];
  outv[i] = s;
}
