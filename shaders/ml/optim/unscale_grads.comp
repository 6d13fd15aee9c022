#version 450
// GradScaler's unscale: g = g * (1 / scale) over up to OA_OPTIM_ITEMS
// gradients (or element ranges of them) in one dispatch, and found_inf set to
// 1.0 where any element is inf or NaN (torch's
// _amp_foreach_non_finite_check_and_unscale_). found_inf is only ever set (an
// integer atomic OR of 1.0's bits), so the result does not depend on the order
// of the workgroups. Workgroups map to items as update_items.push.h says; each
// thread handles 4 elements (1024 per workgroup).
// Bindings: 0..7 the items' gradients, 8 scale (one float), 9 found_inf (one
// float, as bits).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/optim/unscale_grads.push.h"
layout(local_size_x = 256) in;
#define ITEM(k) layout(std430, binding = k) buffer G##k { float g##k[]; };
ITEM(0) ITEM(1) ITEM(2) ITEM(3) ITEM(4) ITEM(5) ITEM(6) ITEM(7)
layout(std430, binding = 8) readonly buffer S { float scale[]; };
layout(std430, binding = 9) buffer F { uint found_inf[]; };
#include "ml/optim/update_items.glsl"

// Unscales element i of item j; true when it was inf or NaN.
#define UNSCALE(k)                                             \
  case k: {                                                     \
    const float v = g##k[i];                                    \
    g##k[i] = v * inv_scale;                                    \
    return (floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u; \
  }
bool unscale(uint j, uint i, float inv_scale) {
  switch (j) {
    UNSCALE(0) UNSCALE(1) UNSCALE(2) UNSCALE(3) UNSCALE(4) UNSCALE(5) UNSCALE(6) UNSCALE(7)
  }
  return false;
}

void main() {
  uint local;
  const uint j = update_item(OA_GROUP_ID.x, local);
  const float inv_scale = 1.0 / scale[0];
  bool bad = false;
  const uint i0 = local * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n[j]) break;
    bad = unscale(j, i, inv_scale) || bad;
  }
  if (bad) atomicOr(found_inf[0], floatBitsToUint(1.0));
}
