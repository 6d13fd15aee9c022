#version 450
// Per-channel statistics of batch_norm_2d, one invocation per channel; writes
// stat = [mean; rstd] (2 * C values).
//   TRAINING: mean = s1 / M, var = s2 / M (s1, s2: channel sums of x and of
//     (x - mean)^2), rstd = 1 / sqrt(var + eps); the running statistics are
//     updated in place: running_mean = (1 - momentum) running_mean + momentum mean,
//     running_var = (1 - momentum) running_var + momentum var * M / (M - 1)
//     (the unbiased variance, as torch.nn.functional.batch_norm).
//   otherwise: mean = running_mean, rstd = 1 / sqrt(running_var + eps); s1 and s2
//     are placeholders.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const bool TRAINING = true;
layout(std430, binding = 0) readonly buffer S1 { float s1[]; };
layout(std430, binding = 1) readonly buffer S2 { float s2[]; };
layout(std430, binding = 2) buffer RunningMean { float running_mean[]; };
layout(std430, binding = 3) buffer RunningVar { float running_var[]; };
layout(std430, binding = 4) writeonly buffer Stat { float stat[]; };
OA_PUSH_BEGIN uint C; float inv_m; float unbias; float eps; float momentum; OA_PUSH_END

void main() {
  const uint c = OA_GROUP_ID.x * 64u + gl_LocalInvocationID.x;
  if (c >= pc.C) return;
  if (TRAINING) {
    const float mean = s1[c] * pc.inv_m, var = s2[c] * pc.inv_m;
    stat[c] = mean;
    stat[pc.C + c] = inversesqrt(var + pc.eps);
    running_mean[c] = (1.0 - pc.momentum) * running_mean[c] + pc.momentum * mean;
    running_var[c] = (1.0 - pc.momentum) * running_var[c] + pc.momentum * var * pc.unbias;
  } else {
    stat[c] = running_mean[c];
    stat[pc.C + c] = inversesqrt(running_var[c] + pc.eps);
  }
}
