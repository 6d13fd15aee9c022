#version 450
// Bias gradient: db[c] = sum over n and positions p of dy[n, c, p], for dy
// [N, C, P]. Workgroup (x = c, y = split) reduces the split's slice of the
// N * P values of channel c: each invocation accumulates a strided share, then
// the workgroup adds them (common/reduce.glsl). With several splits the results are
// partials, `channels` floats apart, summed by ml/conv/reduce.
// Push: channels C, positions P, batch N, values per split.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Dy { float dy[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };
#include "ml/conv/bias_grad.push.h"

void main() {
  const uint c = OA_GROUP_ID.x;
  const uint split = OA_GROUP_ID.y;
  const uint tid = gl_LocalInvocationID.x;
  const uint total = pc.batch * pc.positions;
  const uint begin = split * pc.per_split;
  const uint end = min(total, begin + pc.per_split);
  float s = 0.0;
  for (uint e = begin + tid; e < end; e += 256u) {
    const uint n = e / pc.positions;
    s += dy[(n * pc.channels + c) * pc.positions + (e - n * pc.positions)];
  }
  s = oa_workgroup_sum(s);
  if (tid == 0u) outv[split * pc.channels + c] = s;
}
