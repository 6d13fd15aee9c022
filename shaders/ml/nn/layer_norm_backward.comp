#version 450
// Input gradient of layer_norm (layer_norm.comp) per row, with g = dy * weight
// and xhat = ((x - k) - mu) * rstd from the saved statistics (k = x[r, 0], mu
// the mean minus k):
//   dx = rstd * (g - sum(g) / D - xhat * sum(g * xhat) / D),
// the two sums reduced cooperatively (common/rows.glsl). x and dy are read
// once: each invocation keeps g and xhat of its share of the row in registers
// (ml/nn/norm_row.glsl). CENTER false: RMS normalisation (layer_norm.comp),
// k = mu = 0 and no sum(g) term (mu is not read):
//   dx = rstd * (g - xhat * sum(g * xhat) / D).
// GROUPED: group normalisation, weight per channel (ml/nn/norm_channel.glsl).
// The weight and bias gradients: layer_norm_backward_affine.comp.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 3) const bool HAS_WEIGHT = true;
layout(constant_id = 4) const bool CENTER = true;
layout(constant_id = 5) const bool GROUPED = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 3) readonly buffer Mu { float mu_in[]; };
layout(std430, binding = 4) readonly buffer Rstd { float rstd_in[]; };
layout(std430, binding = 5) writeonly buffer DX { float dx[]; };
layout(std430, binding = 5) writeonly buffer DX4 { vec4 dx4[]; };
#include "ml/nn/layer_norm_backward.push.h"
#include "ml/nn/norm_row.glsl"

// g = dy * weight of item i.
vec4 grad_y(uint row, uint i) {
  const vec4 g = NORM_LOAD(dy, dy4, row, i);
  return HAS_WEIGHT ? g * NORM_AFFINE(w, w4, row, i) : g;
}

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint items = live ? pc.D / WIDTH : 0u, tail = lane + CACHE * LANES;
  const float k = CENTER && live ? x[row * pc.D] : 0.0, mu = CENTER && live ? mu_in[row] : 0.0, rstd = live ? rstd_in[row] : 0.0;
  vec4 g[CACHE], xhat[CACHE];  // of items lane + n * LANES (zero past the row)
  float sg = 0.0, sgx = 0.0;
  [[unroll]] for (uint n = 0u; n < CACHE; ++n) {
    const uint i = lane + n * LANES;
    g[n] = i < items ? grad_y(row, i) : vec4(0.0);
    xhat[n] = i < items ? ((NORM_LOAD(x, x4, row, i) - k) - mu) * rstd : vec4(0.0);
    sg += norm_item_sum(g[n]);
    sgx += norm_item_sum(g[n] * xhat[n]);
  }
  for (uint i = tail; i < items; i += LANES) {
    const vec4 gi = grad_y(row, i);
    sg += norm_item_sum(gi);
    sgx += norm_item_sum(gi * (((NORM_LOAD(x, x4, row, i) - k) - mu) * rstd));
  }
  const float inv_d = 1.0 / float(pc.D);
  const float mg = CENTER ? rows_sum(sg) * inv_d : 0.0, mgx = rows_sum(sgx) * inv_d;
  if (!live) return;
  [[unroll]] for (uint n = 0u; n < CACHE; ++n) {
    const uint i = lane + n * LANES;
    if (i < items) NORM_STORE(dx, dx4, row, i, rstd * (g[n] - mg - xhat[n] * mgx));
  }
  for (uint i = tail; i < items; i += LANES)
    NORM_STORE(dx, dx4, row, i, rstd * (grad_y(row, i) - mg - (((NORM_LOAD(x, x4, row, i) - k) - mu) * rstd) * mgx));
}
