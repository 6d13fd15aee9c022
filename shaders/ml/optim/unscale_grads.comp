#version 450
// GradScaler's unscale: g = g * (1 / scale) over one gradient, and found_inf
// set to 1.0 where any element of g is inf or NaN (torch's
// _amp_foreach_non_finite_check_and_unscale_). found_inf is only ever set (an
// integer atomic OR of 1.0's bits), so the result does not depend on the order
// of the workgroups. Each thread handles 4 elements (1024 per workgroup).
// Bindings: 0 the gradient, 1 scale (one float), 2 found_inf (one float, as bits).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer G { float g[]; };
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) buffer F { uint found_inf[]; };
#include "ml/optim/unscale_grads.push.h"

void main() {
  float inv_scale = 1.0 / scale[0];
  bool bad = false;
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) break;
    float v = g[i];
    bad = bad || (floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u;  // inf or NaN
    g[i] = v * inv_scale;
  }
  if (bad) atomicOr(found_inf[0], floatBitsToUint(1.0));
}
