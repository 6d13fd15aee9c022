#version 450
// Layer normalisation over the last axis (Ba et al. 2016; torch.nn.functional.layer_norm):
// for each row r of x viewed as [R, D], shifted by its first element k = x[r, 0],
//   mu = sum(x - k) / D (the mean minus k), var = sum(((x - k) - mu)^2) / D
//   (two passes, biased), rstd = 1 / sqrt(var + eps),
//   y = ((x - k) - mu) * rstd * weight + bias.
// The shift cancels a large common offset before anything is rounded at its
// magnitude. The row's invocations reduce cooperatively (common/rows.glsl); a NaN
// makes the row's outputs NaN. Writes mu and rstd per row for the backward
// pass (rstd only without CENTER). HAS_WEIGHT / HAS_BIAS: without them weight 1, bias 0 (their bindings
// are then placeholders and never read). CENTER false gives RMS normalisation
// (Zhang & Sennrich 2019; torch.nn.functional.rms_norm): k = mu = 0, so
// rstd = 1 / sqrt(sum(x^2) / D + eps) and y = x * rstd * weight.
// GROUPED: group normalisation (Wu & He 2018) over the [N * G, C / G * S] view,
// weight and bias per channel (ml/nn/norm_channel.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 1) const bool HAS_WEIGHT = true;
layout(constant_id = 2) const bool HAS_BIAS = true;
layout(constant_id = 3) const bool CENTER = true;
layout(constant_id = 4) const bool GROUPED = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Mu { float mu_out[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
#include "ml/nn/layer_norm.push.h"
#include "common/rows.glsl"
#include "ml/nn/norm_channel.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.D;
  const float k = CENTER && live ? x[base] : 0.0;
  float mu = 0.0;
  if (CENTER) {
    float s = 0.0;
    if (live)
      for (uint j = lane; j < pc.D; j += LANES) s += x[base + j] - k;
    mu = rows_sum(s) / float(pc.D);
  }
  float q = 0.0;
  if (live)
    for (uint j = lane; j < pc.D; j += LANES) {
      const float d = (x[base + j] - k) - mu;
      q += d * d;
    }
  const float rstd = inversesqrt(rows_sum(q) / float(pc.D) + pc.eps);
  if (!live) return;
  for (uint j = lane; j < pc.D; j += LANES) {
    float v = ((x[base + j] - k) - mu) * rstd;
    const uint c = norm_channel(row, j);
    if (HAS_WEIGHT) v *= w[c];
    if (HAS_BIAS) v += b[c];
    y[base + j] = v;
  }
  if (lane == 0u) {
    if (CENTER) mu_out[row] = mu;  // else the binding is a placeholder
    rstd_out[row] = rstd;
  }
}
