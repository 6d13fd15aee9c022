#version 450
// Per-channel statistics of batch_norm_2d, one invocation per channel; writes
// stat = [mu; rstd] (2 * C values).
//   TRAINING: mu = s1 / M and var = s2 / M, with s1, s2 the channel sums of
//     (x - k) and ((x - k) - mu)^2 about the channel's first value k = x[0, c, 0]
//     (batch_norm_moments.comp): mu is the mean minus k. rstd = 1 / sqrt(var + eps);
//     the running statistics are updated in place:
//     running_mean = (1 - momentum) running_mean + momentum (k + mu),
//     running_var = (1 - momentum) running_var + momentum var * M / (M - 1)
//     (the unbiased variance, as torch.nn.functional.batch_norm).
//   otherwise: mu = running_mean (no shift), rstd = 1 / sqrt(running_var + eps);
//     s1, s2 and x are placeholders.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const bool TRAINING = true;
layout(std430, binding = 0) readonly buffer S1 { float s1[]; };
layout(std430, binding = 1) readonly buffer S2 { float s2[]; };
layout(std430, binding = 2) buffer RunningMean { float running_mean[]; };
layout(std430, binding = 3) buffer RunningVar { float running_var[]; };
layout(std430, binding = 4) writeonly buffer Stat { float stat[]; };
layout(std430, binding = 5) readonly buffer X { float x[]; };
#include "ml/nn/batch_norm_stats.push.h"

void main() {
  const uint c = OA_GROUP_ID.x * 64u + gl_LocalInvocationID.x;
  if (c >= pc.C) return;
  if (TRAINING) {
    const float mu = s1[c] * pc.inv_m, var = s2[c] * pc.inv_m;
    stat[c] = mu;
    stat[pc.C + c] = inversesqrt(var + pc.eps);
    running_mean[c] = (1.0 - pc.momentum) * running_mean[c] + pc.momentum * (x[c * pc.S] + mu);
    running_var[c] = (1.0 - pc.momentum) * running_var[c] + pc.momentum * var * pc.unbias;
  } else {
    stat[c] = running_mean[c];
    stat[pc.C + c] = inversesqrt(running_var[c] + pc.eps);
  }
}
