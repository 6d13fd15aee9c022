#version 450
// One SGD step, torch.optim.SGD semantics, on up to OA_OPTIM_ITEMS parameters
// (or element ranges of them) in one dispatch:
//   d = g + weight_decay * p
//   MOMENTUM 1: b = first ? d : momentum * b + (1 - dampening) * d
//               d = NESTEROV 1 ? d + momentum * b : b
//   p = p - lr * d
// with lr read from binding 24 (two floats per parameter, the item's slot
// picks them) and first when the parameter's update count (binding 25) is 0.
// Nothing changes when found_inf (binding 26, GradScaler's) is nonzero.
// PUSHED = 1 (a step without found_inf): the update count and lr, the same
// for every item, come from the push constants instead and bindings 24 to 26
// are never touched. Workgroups map to items as update_items.push.h says; each
// thread updates 4 elements (1024 per workgroup).
// Bindings: 3j the parameter (read-write), 3j + 1 its gradient, 3j + 2 its
// momentum buffer of item j; 24 the step constants, 25 the update counts, 26
// found_inf. With MOMENTUM 0 the parameter is bound at 3j + 2 as well and
// that binding is never touched.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MOMENTUM = 0;
layout(constant_id = 1) const uint NESTEROV = 0;
layout(constant_id = 2) const uint PUSHED = 0;
// The three buffers of item k.
#define ITEM(k)                                                               \
  layout(std430, binding = 3 * k) buffer P##k { float p##k[]; };               \
  layout(std430, binding = 3 * k + 1) readonly buffer G##k { float g##k[]; }; \
  layout(std430, binding = 3 * k + 2) buffer B##k { float b##k[]; };
ITEM(0) ITEM(1) ITEM(2) ITEM(3) ITEM(4) ITEM(5) ITEM(6) ITEM(7)
layout(std430, binding = 24) readonly buffer C { float constants[]; };
layout(std430, binding = 25) readonly buffer N { float counts[]; };
layout(std430, binding = 26) readonly buffer F { float found_inf[]; };
#include "ml/optim/sgd_step.push.h"
#include "ml/optim/update_items.glsl"

// The update of item k's elements i0 + 0, 256, 512, 768 (those below its count).
#define UPDATE(k)                                                       \
  for (uint s = 0u; s < 4u; ++s) {                                      \
    uint i = i0 + s * 256u;                                             \
    if (i >= pc.n[k]) return;                                           \
    float w = p##k[i];                                                  \
    float d = g##k[i];                                                  \
    if (pc.weight_decay != 0.0) d += pc.weight_decay * w;               \
    if (MOMENTUM == 1u) {                                               \
      float v = first ? d : pc.momentum * b##k[i] + (1.0 - pc.dampening) * d; \
      b##k[i] = v;                                                      \
      d = NESTEROV == 1u ? d + pc.momentum * v : v;                     \
    }                                                                   \
    p##k[i] = w - lr * d;                                               \
  }

void main() {
  if (PUSHED == 0u && found_inf[0] != 0.0) return;
  uint local;
  uint j = update_item(OA_GROUP_ID.x, local);
  uint slot = pc.slot[j];
  uint i0 = local * 1024u + gl_LocalInvocationID.x;
  float lr = PUSHED == 1u ? pc.lr : constants[2u * slot];
  bool first = (PUSHED == 1u ? pc.count : counts[slot]) == 0.0;
  // One branch per workgroup (j is uniform), the whole update inside: a
  // branch per access would run every case on lavapipe.
  switch (int(j)) {
    case 0: UPDATE(0) break;
    case 1: UPDATE(1) break;
    case 2: UPDATE(2) break;
    case 3: UPDATE(3) break;
    case 4: UPDATE(4) break;
    case 5: UPDATE(5) break;
    case 6: UPDATE(6) break;
    default: UPDATE(7)
  }
}
