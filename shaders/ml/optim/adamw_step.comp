#version 450
// One AdamW step on one parameter (Loshchilov & Hutter 2019, as
// torch.optim.AdamW computes it, amsgrad off):
//   p = p * (1 - lr * weight_decay)                       (decay_factor)
//   m = m + (1 - beta1) * (g - m)                         (lerp)
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
// with step_size = lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t), at
// the parameter's t-th update, read from binding 4 (three floats per
// parameter: decay_factor, step_size, bc2_sqrt; pc.slot picks them). Each
// thread updates 4 elements (1024 per workgroup).
// Bindings: 0 parameter, 1 gradient, 2 exp_avg (m), 3 exp_avg_sq (v), 4 step constants.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) buffer M { float m[]; };
layout(std430, binding = 3) buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer C { float constants[]; };
#include "ml/optim/adamw_step.push.h"

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  float decay_factor = constants[3u * pc.slot], step_size = constants[3u * pc.slot + 1u], bc2_sqrt = constants[3u * pc.slot + 2u];
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    float grad = g[i];
    float w = p[i] * decay_factor;
    float mi = m[i];
    mi = mi + (1.0 - pc.beta1) * (grad - mi);
    float vi = pc.beta2 * v[i] + (1.0 - pc.beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - step_size * (mi / (sqrt(vi) / bc2_sqrt + pc.eps));
  }
}
