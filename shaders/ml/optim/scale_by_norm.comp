#version 450
// g = g * min(max_norm / (norm + 1e-6), 1), the scale of
// torch.nn.utils.clip_grad_norm_, read from the total norm on the device,
// over up to OA_OPTIM_ITEMS gradients (or element ranges of them) in one
// dispatch. Workgroups map to items as update_items.push.h says; each thread
// updates 4 elements (1024 per workgroup).
// Bindings: 0..7 the items' gradients, 8 the norm (one float).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/optim/scale_by_norm.push.h"
layout(local_size_x = 256) in;
#define ITEM(k) layout(std430, binding = k) buffer G##k { float g##k[]; };
ITEM(0) ITEM(1) ITEM(2) ITEM(3) ITEM(4) ITEM(5) ITEM(6) ITEM(7)
layout(std430, binding = 8) readonly buffer N { float norm[]; };
#include "ml/optim/update_items.glsl"

#define SCALE(k) \
  case k: g##k[i] *= s; return;
void scale(uint j, uint i, float s) {
  switch (j) {
    SCALE(0) SCALE(1) SCALE(2) SCALE(3) SCALE(4) SCALE(5) SCALE(6) SCALE(7)
  }
}

void main() {
  uint local;
  const uint j = update_item(OA_GROUP_ID.x, local);
  const float s = min(pc.max_norm / (norm[0] + 1e-6), 1.0);
  const uint i0 = local * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n[j]) return;
    scale(j, i, s);
  }
}
