#version 450
// The packed projection qkv [B*S, 3*H*Dh] (each row: q, then k, then v, head
// h at columns h*Dh .. (h+1)*Dh of its third) and the three heads layouts
// q, k, v [B*H, S, Dh], in one pass. BACKWARD = 0 (split_qkv_heads): reads
// qkv, writes q, k and v; BACKWARD = 1: reads their gradients, writes the
// gradient of qkv. pc.n: the elements of one head tensor.
// HALF = 0: 32-bit elements; each invocation moves 4 elements of each head
// tensor, consecutive invocations consecutive head elements.
// HALF = 1: 16-bit elements (f16 or bf16 bits, two to a word; the last word
// of an odd count has a zero high half); each invocation writes 4 words of
// what it writes (a word of each head tensor, or of qkv in the backward).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint BACKWARD = 0;
layout(constant_id = 1) const uint HALF = 0;
layout(std430, binding = 0) buffer Packed { uint qkv[]; };
layout(std430, binding = 1) buffer Q { uint q[]; };
layout(std430, binding = 2) buffer K { uint k[]; };
layout(std430, binding = 3) buffer V { uint v[]; };
#include "ml/attention/heads.push.h"

// The element of qkv's q third that head element i = ((b*H + h)*S + s)*Dh + d is.
uint packed_of(uint i, uint width) {
  const uint d = i % pc.dh;
  const uint t = i / pc.dh;
  const uint s = t % pc.seq;
  const uint bh = t / pc.seq;
  const uint b = bh / pc.heads;
  return (b * pc.seq + s) * 3u * width + (bh - b * pc.heads) * pc.dh + d;
}

uint bits(uint word, uint e) { return (word >> ((e & 1u) * 16u)) & 0xffffu; }

// The 16 bits of packed element p (backward: from the gradient of q, k or v).
uint packed_bits(uint p, uint width) {
  const uint row = p / (3u * width), col = p - row * 3u * width;
  const uint which = col / width, c = col - which * width;
  const uint h = c / pc.dh, d = c - h * pc.dh;
  const uint b = row / pc.seq, s = row - b * pc.seq;
  const uint i = ((b * pc.heads + h) * pc.seq + s) * pc.dh + d;
  const uint w = which == 0u ? q[i >> 1] : which == 1u ? k[i >> 1] : v[i >> 1];
  return bits(w, i);
}

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint width = pc.heads * pc.dh;
  if (HALF == 0u) {
    for (uint e = 0u; e < 4u; ++e) {
      const uint i = i0 + e * 256u;
      if (i >= pc.n) return;
      const uint at = packed_of(i, width);
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
    return;
  }
  const uint total = BACKWARD == 0u ? pc.n : 3u * pc.n;  // elements written
  const uint words = (total + 1u) / 2u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = i0 + e * 256u, i = 2u * w;
    if (w >= words) return;
    const bool pair = i + 1u < total;
    if (BACKWARD == 1u) {
      qkv[w] = packed_bits(i, width) | (pair ? packed_bits(i + 1u, width) << 16 : 0u);
      continue;
    }
    const uint a = packed_of(i, width), b = pair ? packed_of(i + 1u, width) : a;
    for (uint t = 0u; t < 3u; ++t) {
      const uint lo = bits(qkv[(a + t * width) >> 1], a + t * width);
      const uint hi = pair ? bits(qkv[(b + t * width) >> 1], b + t * width) << 16 : 0u;
      if (t == 0u) q[w] = lo | hi;
      else if (t == 1u) k[w] = lo | hi;
      else v[w] = lo | hi;
    }
  }
}
