#version 450
// Mean squared error passes (torch.nn.functional.mse_loss), one invocation per element:
//   MODE 0: out = (a - b)^2 (the unreduced loss, or the values a reduction sums);
//   MODE 1: out = 2 (a - b) * g * scale, the gradient for a (the gradient for b
//           is its negation: scale -1), g = dy[0] (REDUCED) or dy[i].
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const bool REDUCED = true;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 3) writeonly buffer Out { float out_[]; };
#include "ml/nn/mse.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const float d = a[e] - b[e];
  out_[e] = MODE == 0u ? d * d : 2.0 * d * (REDUCED ? dy[0] : dy[e]) * pc.scale;
}
