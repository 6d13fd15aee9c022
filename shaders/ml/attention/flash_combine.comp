#version 450
// Flash attention forward, split keys: merges the key ranges' partial results
// of flash_forward.comp (PARTIAL) into the output, lse and stats, as the
// unsplit forward defines them. Per row r = bh * sq + i, with (m_z, l_z) and
// the unnormalized o_z of range z (m in the forward's exponent units, u per
// push): m = max_z m_z, w_z = exp2((m_z - m) u) (0 for a range that saw no
// key), l = sum_z w_z l_z, o = (sum_z w_z o_z) / l, ranges added in order.
// One invocation per output element (row, column); column 0 also writes the
// row's lse and stats. A row with no visible key gets zeros, lse = -inf and
// stats (-inf, -inf); a NaN in any range makes the row NaN.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
#include "ml/attention/flash_layout.glsl"
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Parts { float o_part[]; };     // [ranges * rows, dv]
layout(std430, binding = 1) readonly buffer PartStats { vec2 ml_part[]; };  // [ranges * rows]: (m, l)
layout(std430, binding = 2) writeonly buffer O { float o_out[]; };
layout(std430, binding = 3) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 4) writeonly buffer Stats { vec2 stats_out[]; };
// rows = bh * sq; lse_scale turns m into natural units (1 for masked logits, |scale| for raw scores).
#include "ml/attention/flash_combine.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.rows * pc.dv) return;
  const uint r = e / pc.dv, c = e - r * pc.dv;
  float m = -OA_INF;
  for (uint z = 0u; z < pc.ranges; ++z) m = oa_max(m, ml_part[z * pc.rows + r].x);
  float l = 0.0, acc = 0.0;
  for (uint z = 0u; z < pc.ranges; ++z) {
    const vec2 ml = ml_part[z * pc.rows + r];
    const float w = ml.x == -OA_INF ? 0.0 : exp2((ml.x - m) * pc.u);
    l += w * ml.y;
    acc += w * o_part[(z * pc.rows + r) * pc.dv + c];
  }
  const uint bh = r / pc.sq;
  o_out[flash_row(bh, r - bh * pc.sq, pc.sq, pc.dv, pc.heads) + c] = l == 0.0 ? 0.0 : acc / l;
  if (c == 0u) {
    const float log2_l = l == 0.0 ? -OA_INF : log2(l);
    lse_out[r] = l == 0.0 ? -OA_INF : fma(m, pc.lse_scale, log2_l * OA_LN2);
    stats_out[r] = vec2(l == 0.0 ? -OA_INF : m, log2_l);
  }
}
