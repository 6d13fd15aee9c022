#version 450
// Head permutation between packed rows [B*S, H*Dh] and heads [B*H, S, Dh].
// MERGE = 0 (split_heads): out is the heads layout, in the packed one.
// MERGE = 1 (merge_heads): the reverse. Each invocation writes 4 elements,
// consecutive invocations consecutive output elements.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MERGE = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
#include "ml/attention/heads.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;
    if (i >= pc.n) return;
    const uint d = i % pc.dh;
    const uint t = i / pc.dh;
    uint src;
    if (MERGE == 0u) {  // i = ((b*H + h)*S + s)*Dh + d
      const uint s = t % pc.seq;
      const uint bh = t / pc.seq;
      const uint b = bh / pc.heads;
      src = ((b * pc.seq + s) * pc.heads + (bh - b * pc.heads)) * pc.dh + d;
    } else {  // i = ((b*S + s)*H + h)*Dh + d
      const uint h = t % pc.heads;
      const uint bs = t / pc.heads;
      const uint b = bs / pc.seq;
      src = ((b * pc.heads + h) * pc.seq + (bs - b * pc.seq)) * pc.dh + d;
    }
    y[i] = x[src];
  }
}
