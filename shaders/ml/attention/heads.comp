#version 450
// Head permutation between packed rows [B*S, H*Dh] and heads [B*H, S, Dh].
// MERGE = 0 (split_heads): out is the heads layout, in the packed one.
// MERGE = 1 (merge_heads): the reverse. HALF = 1 moves 16-bit elements (f16
// or bf16 bits, two to a word, the last word's high half zero for an odd
// count; common/half_io.glsl), HALF = 0 32-bit ones. Each invocation writes 4
// output words, consecutive invocations consecutive words.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MERGE = 0;
layout(constant_id = 1) const uint HALF = 0;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
#include "ml/attention/heads.push.h"

// The element of x that output element i takes.
uint source(uint i) {
  const uint d = i % pc.dh;
  const uint t = i / pc.dh;
  if (MERGE == 0u) {  // i = ((b*H + h)*S + s)*Dh + d
    const uint s = t % pc.seq;
    const uint bh = t / pc.seq;
    const uint b = bh / pc.heads;
    return ((b * pc.seq + s) * pc.heads + (bh - b * pc.heads)) * pc.dh + d;
  }
  // i = ((b*S + s)*H + h)*Dh + d
  const uint h = t % pc.heads;
  const uint bs = t / pc.heads;
  const uint b = bs / pc.seq;
  return ((b * pc.heads + h) * pc.seq + (bs - b * pc.seq)) * pc.dh + d;
}

// The 16 bits of element e of x.
uint half_bits(uint e) { return (x[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu; }

void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint words = HALF == 0u ? pc.n : (pc.n + 1u) / 2u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = w0 + e * 256u;
    if (w >= words) return;
    if (HALF == 0u) {
      y[w] = x[source(w)];
    } else {
      const uint i = 2u * w;
      y[w] = half_bits(source(i)) | (i + 1u < pc.n ? half_bits(source(i + 1u)) << 16 : 0u);
    }
  }
}
