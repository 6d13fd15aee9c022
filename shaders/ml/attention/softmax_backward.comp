#version 450
// dx = scale * y * (dy - sum(y * dy)) over each row of `cols` columns, for
// y = softmax(x * scale + mask). Rows where y is zero (fully masked) give zero.
// The first CACHE columns each invocation visits stay in registers, so rows up
// to LANES * CACHE columns are read from memory once.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) writeonly buffer DX { float dx[]; };

#include "ml/attention/softmax_backward.push.h"
#include "common/rows.glsl"
const uint CACHE = 8u;

void main() {
  const uint lane = rows_lane(), row = rows_row();
  const uint end = row < pc.rows ? pc.cols : 0u;

  const uint tail = lane + CACHE * LANES;
  float ys[CACHE];
  float gs[CACHE];
  float dot_part = 0.0;
  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * LANES;
    ys[n] = c < end ? y[row * pc.cols + c] : 0.0;
    gs[n] = c < end ? dy[row * pc.cols + c] : 0.0;
    dot_part += ys[n] * gs[n];
  }
  for (uint c = tail; c < end; c += LANES) dot_part += y[row * pc.cols + c] * dy[row * pc.cols + c];
  const float total = rows_sum(dot_part);

  for (uint n = 0u; n < CACHE; ++n) {
    const uint c = lane + n * LANES;
    if (c < end) dx[row * pc.cols + c] = pc.scale * ys[n] * (gs[n] - total);
  }
  for (uint c = tail; c < end; c += LANES)
    dx[row * pc.cols + c] = pc.scale * y[row * pc.cols + c] * (dy[row * pc.cols + c] - total);
}
