#version 450
// Cross entropy of logits x [N, C] against class targets t [N]
// (torch.nn.functional.cross_entropy), fused with the log-softmax. Per row,
// with m the row maximum, ls = log(sum(exp(x - m))) and label smoothing eps:
//   loss = ls - (1 - eps) (x[t] - m) - eps / C * sum(x - m)
//        (= -sum_j q_j log p_j, q = (1 - eps) onehot(t) + eps / C, sum q = 1),
// every term relative to m so that a large common offset costs no precision;
// 0 for t == ignore_index. m, ls and sum(x - m) come from one read of the row
// (online softmax, common/row_slots.glsl, SLOTS slots of 4 columns loaded at
// a time; sum(x - m) is kept relative to the running max likewise). Any other t
// outside [0, C) gives NaN and fails the op's device check (binding 4,
// Engine::register_device_check: id pc.check_id, t as the value). A NaN logit
// makes m and the row's loss NaN.
// PAIRS: write (loss, weight) pairs, weight 1 for a counted row and 0 for an
// ignored one (for the reductions); otherwise the losses alone. Writes
// stat = (m, ls) per row for the backward pass.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 3) const bool PAIRS = true;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) writeonly buffer Stat { float stat_out[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss[]; };
layout(std430, binding = 4) buffer Check { uint check[]; };
#include "ml/nn/cross_entropy.push.h"
#include "common/rows.glsl"
#include "common/row_slots.glsl"
#include "common/device_check.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.L, end = live ? pc.L : 0u;
  // sd: the sum of x - shift(m) over the count values folded so far (-inf
  // values make it -inf, as in the two-pass sum)
  float m = -OA_INF, s = 0.0, sd = 0.0, count = 0.0;
  for (uint n = 0u; slot_live(n, end); n += SLOTS) {
    vec4 v[SLOTS];
    [[unroll]] for (uint k = 0u; k < SLOTS; ++k) v[k] = slot_load(base, n + k, end, -OA_INF);
    [[unroll]] for (uint k = 0u; k < SLOTS; ++k) {
      const float before = online_shift(m);
      online_fold(m, s, v[k]);
      if (pc.smoothing != 0.0) {
        sd += count * (before - online_shift(m));
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (slot_column(n + k, j) < end) {
            sd += v[k][j] - online_shift(m);
            count += 1.0;
          }
      }
    }
  }
  const float row_max = rows_max(m);
  s = rows_sum(online_rescale(m, s, row_max));
  if (pc.smoothing != 0.0) sd = rows_sum(m == -OA_INF ? sd : sd + count * (online_shift(m) - online_shift(row_max)));
  m = row_max;
  if (!live || lane != 0u) return;
  const float ls = log(s);
  const int t = target[row];
  float l = 0.0, weight = 0.0;
  if (t != pc.ignore_index) {
    weight = 1.0;
    if (t < 0 || t >= int(pc.L)) {
      oa_fail_check(pc.check_id, t);
      l = uintBitsToFloat(0x7fc00000u);
    } else {
      l = ls - (1.0 - pc.smoothing) * (x[base + uint(t)] - m);
      if (pc.smoothing != 0.0) l -= pc.smoothing / float(pc.L) * sd;
    }
  }
  stat_out[2u * row] = m;
  stat_out[2u * row + 1u] = ls;
  if (PAIRS) {
    loss[2u * row] = l;
    loss[2u * row + 1u] = weight;
  } else {
    loss[row] = l;
  }
}
