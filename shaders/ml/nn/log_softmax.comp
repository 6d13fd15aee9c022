#version 450
// Log-softmax over rows of x [R, L] (torch.nn.functional.log_softmax, dim -1):
// y = (x - m) - log(sum(exp(x - m))), m the row maximum (two cooperative
// reductions, common/rows.glsl). Subtracting m first keeps the row's spread exact
// however large a common offset; m + log(sum) would round log(sum) away. A row
// whose every element is -inf gives y = -inf, never NaN; a NaN makes m and the
// whole row NaN. Writes m per row for the backward pass.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer RowMax { float max_out[]; };
#include "ml/nn/log_softmax.push.h"
#include "common/rows.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.L;
  float m = -OA_INF;
  if (live)
    for (uint j = lane; j < pc.L; j += LANES) m = oa_max(m, x[base + j]);
  m = rows_max(m);
  float s = 0.0;
  if (live && m != -OA_INF)
    for (uint j = lane; j < pc.L; j += LANES) s += exp(x[base + j] - m);
  s = rows_sum(s);
  if (!live) return;
  const float ls = log(s);
  for (uint j = lane; j < pc.L; j += LANES) y[base + j] = m == -OA_INF ? -OA_INF : (x[base + j] - m) - ls;
  if (lane == 0u) max_out[row] = m;
}
