#version 450
// Per-row hit of the accuracy metric: out[i] = 1 when the arg-maximum of row i
// (from the argmax reduction) equals target[i], else 0.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Argmax { int argmax[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) writeonly buffer Out { float hit[]; };
#include "ml/nn/accuracy.push.h"

void main() {
  const uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (i < pc.n) hit[i] = argmax[i] == target[i] ? 1.0 : 0.0;
}
