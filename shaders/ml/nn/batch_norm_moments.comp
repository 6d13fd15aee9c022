#version 450
// Block partial sums of batch_norm_2d's per-channel moments in training, over
// x [N, C, S] (S = H * W). Channel c holds M = N * S values, value i at
// (i / S * C + c) * S + i % S; the sums are shifted by the channel's first
// value k = x[0, c, 0], so a large common offset cancels before rounding:
//   PASS 0: part[c, g] = sum over block g of (x - k)
//   PASS 1: part[c, g] = sum over block g of ((x - k) - mu)^2, with
//           mu = s1[c] / M (s1: the channel totals of pass 0, the mean minus k)
// Block g = OA_GROUP_ID.x covers values [g * 4096, min(M, (g + 1) * 4096)) of
// channel c = OA_GROUP_ID.y: 256 invocations each fold a strided share, then the
// workgroup adds the partial sums (common/reduce.glsl). G = OA_NUM_GROUPS.x blocks per channel.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer S1 { float s1[]; };
layout(std430, binding = 2) writeonly buffer Part { float part[]; };
#include "ml/nn/batch_norm_moments.push.h"

void main() {
  const uint t = gl_LocalInvocationID.x, g = OA_GROUP_ID.x, c = OA_GROUP_ID.y;
  const float k = x[c * pc.S], mu = PASS == 1u ? s1[c] * pc.inv_m : 0.0;
  const uint end = min(pc.M, (g + 1u) * 4096u);
  float acc = 0.0;
  for (uint i = g * 4096u + t; i < end; i += 256u) {
    const float d = x[(i / pc.S * pc.C + c) * pc.S + i % pc.S] - k;
    acc += PASS == 0u ? d : (d - mu) * (d - mu);
  }
  acc = oa_workgroup_sum(acc);
  if (t == 0u) part[c * OA_NUM_GROUPS.x + g] = acc;
}
