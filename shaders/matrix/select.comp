#version 450
// Elementwise selection for where and masked_fill (and their backward):
// y[i] = cond(i) ? A(i) : B(i), with A = a[i] (or the push value when
// FLAGS bit 0 is set) and B = b[i] (or the value when bit 1 is set). a, b and
// y are contiguous over the result's extents ext[0..8) (unused leading axes 1);
// the Bool condition (one byte per element, read from uint words by shifts, so
// no 8-bit storage feature is needed) is broadcast: its byte for the result
// coordinates c is at sum_d c_d * cstride[d] (stride 0 on broadcast axes).
// Elements are copied as bits, PER to a 32-bit word, each invocation writing
// 4 words (past n a word's high bits are 0):
//   DT 0: f32 or i32, one to a word (the push value is an f32's or an
//         int32's bits);
//   DT 1 (f16) or 2 (bf16): two to a word (the value, an f32, rounded to DT
//         to nearest even);
//   DT 4: bool bytes, four to a word (the push value's bits are 0 or 1).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DT = 0;
layout(std430, binding = 0) readonly buffer Cond { uint words[]; };
layout(std430, binding = 1) readonly buffer A { uint a[]; };
layout(std430, binding = 2) readonly buffer B { uint b[]; };
layout(std430, binding = 3) writeonly buffer Out { uint y[]; };
#include "matrix/select.push.h"

const uint PER = DT == 0u ? 1u : DT == 4u ? 4u : 2u, BITS = 32u / PER, MASK = 0xffffffffu >> (32u - BITS);

// Element i's selection between av (from a) and bv (from b), or the value v.
uint pick(uint i, uint av, uint bv, uint v) {
  uint rest = i, s = 0u;
  for (int d = 7; d >= 0; --d) {
    s += (rest % pc.ext[d]) * pc.cstride[d];
    rest /= pc.ext[d];
  }
  const bool c = ((words[s / 4u] >> (8u * (s % 4u))) & 0xffu) != 0u;
  if (c) return (pc.flags & 1u) != 0u ? v : av;
  return (pc.flags & 2u) != 0u ? v : bv;
}

void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint v = DT == 1u || DT == 2u ? oa_narrow(pc.value, DT) : floatBitsToUint(pc.value) & MASK;
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = w0 + e * 256u, i = PER * w;
    if (i >= pc.n) return;
    const uint aw = a[w], bw = b[w];
    uint out_word = 0u;
    for (uint k = 0u; k < PER && i + k < pc.n; ++k)
      out_word |= pick(i + k, (aw >> (k * BITS)) & MASK, (bw >> (k * BITS)) & MASK, v) << (k * BITS);
    y[w] = out_word;
  }
}
