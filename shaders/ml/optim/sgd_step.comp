#version 450
// One SGD step on one parameter, torch.optim.SGD semantics:
//   d = g + weight_decay * p
//   MOMENTUM 1: b = first ? d : momentum * b + (1 - dampening) * d
//               d = NESTEROV 1 ? d + momentum * b : b
//   p = p - lr * d
// with lr read from binding 3 (two floats per parameter, pc.slot picks
// them) and first when the parameter's update count (binding 4) is 0.
// Nothing changes when found_inf (binding 5, GradScaler's) is nonzero.
// PUSHED = 1 (a step without found_inf): the update count and lr come from
// the push constants instead and bindings 3 to 5 are never touched. Each
// thread updates 4 elements (1024 per workgroup).
// Bindings: 0 the parameter (read-write), 1 its gradient, 2 the momentum
// buffer, 3 the step constants, 4 the update counts, 5 found_inf; with
// MOMENTUM 0 the parameter is bound at 2 as well and that binding is never
// touched.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MOMENTUM = 0;
layout(constant_id = 1) const uint NESTEROV = 0;
layout(constant_id = 2) const uint PUSHED = 0;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) buffer B { float b[]; };
layout(std430, binding = 3) readonly buffer C { float constants[]; };
layout(std430, binding = 4) readonly buffer N { float counts[]; };
layout(std430, binding = 5) readonly buffer F { float found_inf[]; };
#include "ml/optim/sgd_step.push.h"

void main() {
  if (PUSHED == 0u && found_inf[0] != 0.0) return;
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  float lr = PUSHED == 1u ? pc.lr : constants[2u * pc.slot];
  bool first = (PUSHED == 1u ? pc.count : counts[pc.slot]) == 0.0;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    float w = p[i];
    float d = g[i];
    if (pc.weight_decay != 0.0) d += pc.weight_decay * w;
    if (MOMENTUM == 1u) {
      float v = first ? d : pc.momentum * b[i] + (1.0 - pc.dampening) * d;
      b[i] = v;
      d = NESTEROV == 1u ? d + pc.momentum * v : v;
    }
    p[i] = w - lr * d;
  }
}
