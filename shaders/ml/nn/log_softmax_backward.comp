#version 450
// Input gradient of log_softmax per row: dx = dy - exp(y) * sum(dy), the sum a
// cooperative reduction (common/rows.glsl). A row whose maximum is -inf (every input
// -inf) gets a zero gradient.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer RowMax { float row_max[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 3) writeonly buffer DX { float dx[]; };
#include "ml/nn/log_softmax_backward.push.h"
#include "common/rows.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.L;
  float s = 0.0;
  if (live)
    for (uint j = lane; j < pc.L; j += LANES) s += dy[base + j];
  s = rows_sum(s);
  if (!live) return;
  const bool masked = row_max[row] == -OA_INF;
  for (uint j = lane; j < pc.L; j += LANES) dx[base + j] = masked ? 0.0 : dy[base + j] - exp(y[base + j]) * s;
}
