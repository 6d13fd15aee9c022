#version 450
// Elementwise passes of batch_norm_2d over x [N, C, H, W] viewed as
// [N, C, S] (S = H * W), channel c = (e / S) % C. M = N * S values per channel;
// stat holds [mu; rstd] per channel (2 * C values, batch_norm_stats.comp) and
//   xhat = ((x - k) - mu) * rstd, k = x[0, c, 0] when SHIFTED (batch
//   statistics: mu is the mean minus k), otherwise (x - mu) * rstd (running
//   statistics: mu is the mean).
//   MODE 0 (forward):           out = xhat * weight + bias
//   MODE 1 (dy * xhat):         out = dy * xhat, whose channel sums give the weight gradient
//   MODE 2 (dx, batch stats):   out = weight * rstd * (dy - sdy / M - xhat * sdyxhat / M)
//   MODE 3 (dx, running stats): out = dy * weight * rstd
// with sdy, sdyxhat the per-channel sums of dy and dy * xhat. Bindings a mode
// does not read are placeholders. Four elements per invocation.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const bool HAS_WEIGHT = true;
layout(constant_id = 2) const bool HAS_BIAS = true;
layout(constant_id = 3) const bool SHIFTED = true;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) readonly buffer Stat { float stat[]; };
layout(std430, binding = 3) readonly buffer W { float w[]; };
layout(std430, binding = 4) readonly buffer B { float b[]; };
layout(std430, binding = 5) readonly buffer SDY { float sdy[]; };
layout(std430, binding = 6) readonly buffer SDYXHAT { float sdyxhat[]; };
layout(std430, binding = 7) writeonly buffer Out { float out_[]; };
#include "ml/nn/batch_norm.push.h"

float value(uint e) {
  const uint c = (e / pc.S) % pc.C;
  const float rstd = stat[pc.C + c], scale = HAS_WEIGHT ? w[c] * rstd : rstd;
  if (MODE == 3u) return dy[e] * scale;
  const float xhat = ((SHIFTED ? x[e] - x[c * pc.S] : x[e]) - stat[c]) * rstd;
  if (MODE == 0u) return HAS_WEIGHT ? (HAS_BIAS ? xhat * w[c] + b[c] : xhat * w[c]) : (HAS_BIAS ? xhat + b[c] : xhat);
  if (MODE == 1u) return dy[e] * xhat;
  return scale * (dy[e] - (sdy[c] + xhat * sdyxhat[c]) * pc.inv_m);
}

void main() {
  const uint e0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint e = e0 + k * 256u;
    if (e < pc.n) out_[e] = value(e);
  }
}
