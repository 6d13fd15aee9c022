#version 450
// Embedding lookup: out[i, d] = weight[indices[i], d] for weight [V, D]. An
// index outside [0, V) gives a zero row (the kernel never reads out of bounds)
// and fails the op's device check (binding 3, Engine::register_device_check:
// id pc.check_id, the index as the value). One invocation per output element.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Indices { int indices[]; };
layout(std430, binding = 1) readonly buffer Weight { float weight[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_[]; };
layout(std430, binding = 3) buffer Check { uint check[]; };
#include "ml/nn/embedding.push.h"
#include "common/device_check.glsl"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const int v = indices[e / pc.D];
  const bool inside = v >= 0 && v < pc.V;
  if (!inside && e % pc.D == 0u) oa_fail_check(pc.check_id, v);
  out_[e] = inside ? weight[uint(v) * pc.D + e % pc.D] : 0.0;
}
