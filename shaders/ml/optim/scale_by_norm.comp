#version 450
// g = g * min(max_norm / (norm + 1e-6), 1), the scale of
// torch.nn.utils.clip_grad_norm_, read from the total norm on the device.
// Each thread updates 4 elements (1024 per workgroup).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer N { float norm[]; };
layout(std430, binding = 1) buffer G { float g[]; };
#include "ml/optim/scale_by_norm.push.h"

void main() {
  float scale = min(pc.max_norm / (norm[0] + 1e-6), 1.0);
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    g[i] *= scale;
  }
}
