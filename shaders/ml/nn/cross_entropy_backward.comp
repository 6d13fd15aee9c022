#version 450
// Logit gradient of cross_entropy.comp, one invocation per logit:
//   dx[i, j] = g_i * (exp((x[i, j] - m_i) - ls_i) - (1 - eps) [j == t_i] - eps / C)
// with (m_i, ls_i) = stat[i] from the forward pass (the row maximum and
// log(sum(exp(x - m)))), and g_i = 0 for an ignored row, NaN for a target
// outside [0, C) (which also fails the op's device check, as the forward's:
// binding 6, reported by the row's first element), and otherwise dy[0] /
// count (REDUCTION 1, mean; count = sums[1], the number of counted rows),
// dy[0] (REDUCTION 2, sum) or dy[i] (REDUCTION 0, none).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint REDUCTION = 1;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) readonly buffer Stat { float stat[]; };
layout(std430, binding = 3) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) readonly buffer Sums { float sums[]; };
layout(std430, binding = 5) writeonly buffer DX { float dx[]; };
layout(std430, binding = 6) buffer Check { uint check[]; };
#include "ml/nn/cross_entropy_backward.push.h"
#include "common/device_check.glsl"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint row = e / pc.C, j = e % pc.C;
  const int t = target[row];
  if (t == pc.ignore_index) {
    dx[e] = 0.0;
    return;
  }
  if (t < 0 || t >= int(pc.C)) {
    if (j == 0u) oa_fail_check(pc.check_id, t);
    dx[e] = uintBitsToFloat(0x7fc00000u);
    return;
  }
  const float g = REDUCTION == 0u ? dy[row] : REDUCTION == 1u ? dy[0] / sums[1] : dy[0];
  const float q = (uint(t) == j ? 1.0 - pc.smoothing : 0.0) + pc.smoothing / float(pc.C);
  dx[e] = g * (exp((x[e] - stat[2u * row]) - stat[2u * row + 1u]) - q);
}
