#version 450
// Input gradient of layer_norm (layer_norm.comp) per row, with g = dy * weight
// and xhat = ((x - k) - mu) * rstd from the saved statistics (k = x[r, 0], mu
// the mean minus k):
//   dx = rstd * (g - sum(g) / D - xhat * sum(g * xhat) / D),
// the two sums reduced cooperatively (common/rows.glsl). WRITE_DX: write dx.
// WRITE_DYXHAT: also write dy * xhat, whose column sums give the weight
// gradient (the bias gradient is the column sums of dy). CENTER false: RMS
// normalisation (layer_norm.comp), k = mu = 0 and no sum(g) term (mu is not read):
//   dx = rstd * (g - xhat * sum(g * xhat) / D).
// GROUPED: group normalisation, weight per channel (ml/nn/norm_channel.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 1) const bool HAS_WEIGHT = true;
layout(constant_id = 2) const bool WRITE_DX = true;
layout(constant_id = 3) const bool WRITE_DYXHAT = true;
layout(constant_id = 4) const bool CENTER = true;
layout(constant_id = 5) const bool GROUPED = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 3) readonly buffer Mu { float mu_in[]; };
layout(std430, binding = 4) readonly buffer Rstd { float rstd_in[]; };
layout(std430, binding = 5) writeonly buffer DX { float dx[]; };
layout(std430, binding = 6) writeonly buffer DYXHAT { float dyxhat[]; };
#include "ml/nn/layer_norm_backward.push.h"
#include "common/rows.glsl"
#include "ml/nn/norm_channel.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.D;
  const float k = CENTER && live ? x[base] : 0.0, mu = CENTER && live ? mu_in[row] : 0.0, rstd = live ? rstd_in[row] : 0.0;
  if (WRITE_DYXHAT && live)
    for (uint j = lane; j < pc.D; j += LANES) dyxhat[base + j] = dy[base + j] * ((x[base + j] - k) - mu) * rstd;
  if (!WRITE_DX) return;
  float sg = 0.0, sgx = 0.0;
  if (live)
    for (uint j = lane; j < pc.D; j += LANES) {
      const float g = HAS_WEIGHT ? dy[base + j] * w[norm_channel(row, j)] : dy[base + j];
      sg += g;
      sgx += g * ((x[base + j] - k) - mu) * rstd;
    }
  const float inv_d = 1.0 / float(pc.D);
  const float mg = CENTER ? rows_sum(sg) * inv_d : 0.0, mgx = rows_sum(sgx) * inv_d;
  if (!live) return;
  for (uint j = lane; j < pc.D; j += LANES) {
    const float g = HAS_WEIGHT ? dy[base + j] * w[norm_channel(row, j)] : dy[base + j];
    dx[base + j] = rstd * (g - mg - ((x[base + j] - k) - mu) * rstd * mgx);
  }
}
