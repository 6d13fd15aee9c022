#version 450
// After an optimizer step: the update count of every parameter that the step
// updated (its last step constant is 1) grows by one, unless found_inf
// (GradScaler's) is nonzero, when the step changed nothing.
// Bindings: 0 the update counts (one float per parameter), 1 the step
// constants (pc.stride floats per parameter, the last the updated flag),
// 2 found_inf.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer N { float counts[]; };
layout(std430, binding = 1) readonly buffer C { float constants[]; };
layout(std430, binding = 2) readonly buffer F { float found_inf[]; };
#include "ml/optim/count_steps.push.h"

void main() {
  if (found_inf[0] != 0.0) return;
  for (uint i = gl_LocalInvocationID.x; i < pc.n; i += 64u)
    if (constants[(i + 1u) * pc.stride - 1u] != 0.0) counts[i] += 1.0;
}
