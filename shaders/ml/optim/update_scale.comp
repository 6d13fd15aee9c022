#version 450
// GradScaler's update (torch's _amp_update_scale_): after a step with found_inf
// nonzero, scale = scale * backoff and the growth tracker restarts at 0;
// otherwise the tracker counts the clean step, and after growth_interval clean
// steps in a row scale = scale * growth (kept only when finite) and the
// tracker restarts. found_inf is then cleared for the next step.
// Bindings: 0 scale (one float), 1 growth tracker (one int), 2 found_inf (one float).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer S { float scale[]; };
layout(std430, binding = 1) buffer T { int tracker[]; };
layout(std430, binding = 2) buffer F { float found_inf[]; };
#include "ml/optim/update_scale.push.h"

void main() {
  if (found_inf[0] != 0.0) {
    scale[0] *= pc.backoff;
    tracker[0] = 0;
  } else {
    int clean = tracker[0] + 1;
    if (clean == pc.growth_interval) {
      float grown = scale[0] * pc.growth;
      if ((floatBitsToUint(grown) & 0x7f800000u) != 0x7f800000u) scale[0] = grown;
      clean = 0;
    }
    tracker[0] = clean;
  }
  found_inf[0] = 0.0;
}
