#version 450
// Layer normalisation over the last axis (Ba et al. 2016; torch.nn.functional.layer_norm):
// for each row r of x viewed as [R, D], shifted by its first element k = x[r, 0],
//   mu = sum((x - k) / D) (the mean minus k), var = sum(((x - k) - mu)^2 / D)
//   (two passes, biased; finite while each square is), rstd = 1 / sqrt(var + eps),
//   y = ((x - k) - mu) * rstd * weight + bias.
// The shift cancels a large common offset before anything is rounded at its
// magnitude. x is read once: each invocation keeps x - k of its share of the
// row in registers (ml/nn/norm_row.glsl), over which both passes run; the
// row's invocations reduce cooperatively (common/rows.glsl). A NaN makes the
// row's outputs NaN. Writes mu and rstd per row for the backward pass (rstd
// only without CENTER). HAS_WEIGHT / HAS_BIAS: without them weight 1, bias 0
// (their bindings are then placeholders and never read). CENTER false gives RMS normalisation
// (Zhang & Sennrich 2019; torch.nn.functional.rms_norm): k = mu = 0, so
// rstd = 1 / sqrt(sum(x^2) / D + eps) and y = x * rstd * weight.
// GROUPED: group normalisation (Wu & He 2018) over the [N * G, C / G * S] view,
// weight and bias per channel (ml/nn/norm_channel.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 3) const bool HAS_WEIGHT = true;
layout(constant_id = 4) const bool HAS_BIAS = true;
layout(constant_id = 5) const bool CENTER = true;
layout(constant_id = 6) const bool GROUPED = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer B4 { vec4 b4[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 4) writeonly buffer Mu { float mu_out[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
#include "ml/nn/layer_norm.push.h"
#include "ml/nn/norm_row.glsl"

// Item i of the output row: ((x - k) - mu) * rstd * weight + bias, from v = x - k.
vec4 normalised(uint row, uint i, vec4 v, float mu, float rstd) {
  vec4 o = (v - mu) * rstd;
  if (HAS_WEIGHT) o *= NORM_AFFINE(w, w4, row, i);
  if (HAS_BIAS) o += NORM_AFFINE(b, b4, row, i);
  return o;
}

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint items = live ? pc.D / WIDTH : 0u, tail = lane + CACHE * LANES;
  const float k = CENTER && live ? x[row * pc.D] : 0.0;
  vec4 v[CACHE];  // x - k of items lane + n * LANES (zero past the row)
  float mu = 0.0;
  // Items are divided by D before they are added, so that the sums (mean and
  // variance) stay finite while every item (and its square) is.
  const float inv_d = 1.0 / float(pc.D);
  [[unroll]] for (uint n = 0u; n < CACHE; ++n) {
    const uint i = lane + n * LANES;
    v[n] = i < items ? NORM_LOAD(x, x4, row, i) - k : vec4(0.0);
  }
  if (CENTER) {
    float s = 0.0;
    [[unroll]] for (uint n = 0u; n < CACHE; ++n) s += norm_item_sum(v[n]) * inv_d;
    for (uint i = tail; i < items; i += LANES) s += norm_item_sum(NORM_LOAD(x, x4, row, i) - k) * inv_d;
    mu = rows_sum(s);
  }
  float q = 0.0;
  [[unroll]] for (uint n = 0u; n < CACHE; ++n) {
    const vec4 d = v[n] - mu;
    if (lane + n * LANES < items) q += norm_item_sum(d * d) * inv_d;
  }
  for (uint i = tail; i < items; i += LANES) {
    const vec4 d = (NORM_LOAD(x, x4, row, i) - k) - mu;
    q += norm_item_sum(d * d) * inv_d;
  }
  const float rstd = inversesqrt(rows_sum(q) + pc.eps);
  if (!live) return;
  [[unroll]] for (uint n = 0u; n < CACHE; ++n) {
    const uint i = lane + n * LANES;
    if (i < items) NORM_STORE(y, y4, row, i, normalised(row, i, v[n], mu, rstd));
  }
  for (uint i = tail; i < items; i += LANES) NORM_STORE(y, y4, row, i, normalised(row, i, NORM_LOAD(x, x4, row, i) - k, mu, rstd));
  if (lane == 0u) {
    if (CENTER) mu_out[row] = mu;  // else the binding is a placeholder
    rstd_out[row] = rstd;
  }
}
