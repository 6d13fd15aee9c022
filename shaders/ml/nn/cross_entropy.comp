#version 450
// Cross entropy of logits x [N, C] against class targets t [N]
// (torch.nn.functional.cross_entropy), fused with the log-softmax. Per row,
// with m the row maximum, ls = log(sum(exp(x - m))) (cooperative reductions,
// common/rows.glsl) and label smoothing eps:
//   loss = ls - (1 - eps) (x[t] - m) - eps / C * sum(x - m)
//        (= -sum_j q_j log p_j, q = (1 - eps) onehot(t) + eps / C, sum q = 1),
// every term relative to m so that a large common offset costs no precision;
// 0 for t == ignore_index. Any other t outside [0, C) gives NaN and fails the
// op's device check (binding 4, Engine::register_device_check: id
// pc.check_id, t as the value). A NaN logit makes m and the row's loss NaN.
// PAIRS: write (loss, weight) pairs, weight 1 for a counted row and 0 for an
// ignored one (for the reductions); otherwise the losses alone. Writes
// stat = (m, ls) per row for the backward pass.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 1) const bool PAIRS = true;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) writeonly buffer Stat { float stat_out[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss[]; };
layout(std430, binding = 4) buffer Check { uint check[]; };
#include "ml/nn/cross_entropy.push.h"
#include "common/rows.glsl"
#include "common/device_check.glsl"

void main() {
  const uint row = rows_row(), lane = rows_lane();
  const bool live = row < pc.R;
  const uint base = row * pc.L;
  float m = -OA_INF;
  if (live)
    for (uint j = lane; j < pc.L; j += LANES) m = oa_max(m, x[base + j]);
  m = rows_max(m);
  float s = 0.0, sd = 0.0;
  if (live)
    for (uint j = lane; j < pc.L; j += LANES) {
      const float d = x[base + j] - m;
      s += exp(d);
      sd += d;
    }
  s = rows_sum(s);
  if (pc.smoothing != 0.0) sd = rows_sum(sd);
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
