#version 450
// One AdamW step on one parameter (Loshchilov & Hutter 2019, as
// torch.optim.AdamW computes it, amsgrad off):
//   p = p * (1 - lr * weight_decay)                       (decay_factor)
//   m = m + (1 - beta1) * (g - m)                         (lerp)
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
// with step_size = lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t) at
// the parameter's t-th update: t - 1 is its update count (binding 5), lr and
// decay_factor are read from binding 4 (three floats per parameter, pc.slot
// picks them). Nothing changes when found_inf (binding 6, GradScaler's) is
// nonzero. PUSHED = 1 (a step without found_inf): the update count, lr and
// decay_factor come from the push constants instead and bindings 4 to 6 are
// never touched. Each thread updates 4 elements (1024 per workgroup).
// Bindings: 0 parameter, 1 gradient, 2 exp_avg (m), 3 exp_avg_sq (v), 4 step
// constants, 5 update counts, 6 found_inf.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PUSHED = 0;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) buffer M { float m[]; };
layout(std430, binding = 3) buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer C { float constants[]; };
layout(std430, binding = 5) readonly buffer N { float counts[]; };
layout(std430, binding = 6) readonly buffer F { float found_inf[]; };
#include "ml/optim/adamw_step.push.h"

// 1 - beta^t = -expm1(t log(beta)) from log_beta = log(beta) (-inf for beta
// 0): a series near 0, where 1 - exp() would cancel, exp() elsewhere; relative
// error a few f32 ulps, with no reliance on the accuracy of the device's log.
float bias_correction(float t, float log_beta) {
  float x = t * log_beta;
  if (x <= -0.5) return 1.0 - exp(x);
  float term = x, sum = x;
  for (int k = 2; k <= 10; ++k) {
    term *= x / float(k);
    sum += term;
  }
  return -sum;
}

void main() {
  if (PUSHED == 0u && found_inf[0] != 0.0) return;
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  float t = (PUSHED == 1u ? pc.count : counts[pc.slot]) + 1.0;
  float decay_factor = PUSHED == 1u ? pc.decay_factor : constants[3u * pc.slot];
  float lr = PUSHED == 1u ? pc.lr : constants[3u * pc.slot + 1u];
  float step_size = lr / bias_correction(t, pc.log_beta1);
  float bc2_sqrt = sqrt(bias_correction(t, pc.log_beta2));
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
