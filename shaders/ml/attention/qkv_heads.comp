#version 450
// The packed projection qkv [B*S, 3*H*Dh] (each row: q, then k, then v, head
// h at columns h*Dh .. (h+1)*Dh of its third) and the three heads layouts
// q, k, v [B*H, S, Dh], in one pass. BACKWARD = 0 (split_qkv_heads): reads
// qkv, writes q, k and v; BACKWARD = 1: reads their gradients, writes the
// gradient of qkv. Each invocation moves 4 elements of each head tensor,
// consecutive invocations consecutive head elements (pc.n: elements of one).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint BACKWARD = 0;
layout(std430, binding = 0) buffer Packed { float qkv[]; };
layout(std430, binding = 1) buffer Q { float q[]; };
layout(std430, binding = 2) buffer K { float k[]; };
layout(std430, binding = 3) buffer V { float v[]; };
#include "ml/attention/heads.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint width = pc.heads * pc.dh;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;  // ((b*H + h)*S + s)*Dh + d
    if (i >= pc.n) return;
    const uint d = i % pc.dh;
    const uint t = i / pc.dh;
    const uint s = t % pc.seq;
    const uint bh = t / pc.seq;
    const uint b = bh / pc.heads;
    const uint at = (b * pc.seq + s) * 3u * width + (bh - b * pc.heads) * pc.dh + d;
    if (BACKWARD == 0u) {
      q[i] = qkv[at];
      k[i] = qkv[at + width];
      v[i] = qkv[at + 2u * width];
    } else {
      qkv[at] = q[i];
      qkv[at + width] = k[i];
      qkv[at + 2u * width] = v[i];
    }
  }
}
