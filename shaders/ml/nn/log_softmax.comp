#version 450
// Log-softmax over rows of x [R, L] (torch.nn.functional.log_softmax, dim -1):
// y = (x - m) - log(sum(exp(x - m))), m the row maximum. Subtracting m first
// keeps the row's spread exact however large a common offset; m + log(sum)
// would round log(sum) away. Each invocation keeps its first SLOTS slots of 4
// columns in registers; m and the sum come from one pass (online softmax,
// common/row_slots.glsl), then y is written, re-reading the columns past the
// slots. A row whose every element is -inf gives y = -inf, never NaN; a NaN
// makes m and the whole row NaN. Writes m per row for the backward pass.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 1) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 2) writeonly buffer RowMax { float max_out[]; };
#include "ml/nn/log_softmax.push.h"
#include "common/rows.glsl"
#include "common/row_slots.glsl"

void store(uint base, uint n, vec4 v) {
  if (ALIGNED) {
    if (slot_column(n, 0u) < pc.L) y4[(base + slot_column(n, 0u)) / 4u] = v;
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (slot_column(n, j) < pc.L) y[base + slot_column(n, j)] = v[j];
  }
}

void main() {
  const uint row = rows_row();
  const bool live = row < pc.R;
  const uint base = row * pc.L, end = live ? pc.L : 0u;
  vec4 cache[SLOTS];
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) cache[n] = slot_load(base, n, end, -OA_INF);
  float m = -OA_INF, s = 0.0;
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) online_fold(m, s, cache[n]);
  for (uint n = SLOTS; slot_live(n, end); n += 4u) {  // 4 slots' loads in flight
    vec4 v[4];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) v[k] = slot_load(base, n + k, end, -OA_INF);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) online_fold(m, s, v[k]);
  }
  const float row_max = rows_max(m);
  const float ls = log(rows_sum(online_rescale(m, s, row_max)));
  if (!live) return;
  // (x - m) - ls, and -inf throughout a row of -inf
  const vec4 shift = vec4(row_max == -OA_INF ? OA_INF : row_max), lsv = vec4(row_max == -OA_INF ? 0.0 : ls);
  [[unroll]] for (uint n = 0u; n < SLOTS; ++n) store(base, n, (cache[n] - shift) - lsv);
  for (uint n = SLOTS; slot_live(n, end); n += 4u) {
    vec4 v[4];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) v[k] = slot_load(base, n + k, end, -OA_INF);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) store(base, n + k, (v[k] - shift) - lsv);
  }
  if (rows_lane() == 0u) max_out[row] = row_max;
}
