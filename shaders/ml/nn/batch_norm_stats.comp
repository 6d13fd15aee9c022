#version 450
// Per-channel statistics of batch_norm_2d, one workgroup looping over the
// channels; writes stat = [mu; rstd] (2 * C values).
//   TRAINING: mu = s1 / M and var = s2 / M, with s1, s2 the channel sums of
//     (x - k) and ((x - k) - mu)^2 about the channel's first value k = x[0, c, 0]
//     (batch_norm_moments.comp): mu is the mean minus k. rstd = 1 / sqrt(var + eps);
//     the running statistics are updated in place:
//     running_mean = (1 - momentum) running_mean + momentum (k + mu),
//     running_var = (1 - momentum) running_var + momentum var * M / (M - 1)
//     (the unbiased variance, as torch.nn.functional.batch_norm).
//     COUNTED: the batch count count[0] (i32, torch's num_batches_tracked) is
//     incremented first; CUMULATIVE (momentum None) takes momentum = 1 / the
//     new count, else momentum is the push constant.
//   otherwise: mu = running_mean (no shift), rstd = 1 / sqrt(running_var + eps);
//     s1, s2, x and count are placeholders.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool TRAINING = true;
layout(constant_id = 1) const bool COUNTED = false;
layout(constant_id = 2) const bool CUMULATIVE = false;
layout(std430, binding = 0) readonly buffer S1 { float s1[]; };
layout(std430, binding = 1) readonly buffer S2 { float s2[]; };
layout(std430, binding = 2) buffer RunningMean { float running_mean[]; };
layout(std430, binding = 3) buffer RunningVar { float running_var[]; };
layout(std430, binding = 4) writeonly buffer Stat { float stat[]; };
layout(std430, binding = 5) readonly buffer X { float x[]; };
layout(std430, binding = 6) buffer Count { int count[]; };
#include "ml/nn/batch_norm_stats.push.h"

shared float counted_momentum;  // 1 / the new count (read by CUMULATIVE)

void main() {
  // One invocation reads and writes the count: no other one touches it.
  if (COUNTED) {
    if (gl_LocalInvocationID.x == 0u) {
      const int n = count[0] + 1;
      count[0] = n;
      counted_momentum = 1.0 / float(n);
    }
    barrier();
  }
  const float momentum = CUMULATIVE ? counted_momentum : pc.momentum;
  for (uint c = gl_LocalInvocationID.x; c < pc.C; c += 256u) {
    if (TRAINING) {
      const float mu = s1[c] * pc.inv_m, var = s2[c] * pc.inv_m;
      stat[c] = mu;
      stat[pc.C + c] = inversesqrt(var + pc.eps);
      running_mean[c] = (1.0 - momentum) * running_mean[c] + momentum * (x[c * pc.S] + mu);
      running_var[c] = (1.0 - momentum) * running_var[c] + momentum * var * pc.unbias;
    } else {
      stat[c] = running_mean[c];
      stat[pc.C + c] = inversesqrt(running_var[c] + pc.eps);
    }
  }
}
