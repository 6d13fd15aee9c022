#version 450
// Elementwise selection for where and masked_fill (and their backward):
// y[i] = cond(i) ? A(i) : B(i), with A = a[i] (or the push value when
// FLAGS bit 0 is set) and B = b[i] (or the value when bit 1 is set). a, b and
// y are contiguous over the result's extents ext[0..8) (unused leading axes 1);
// the Bool condition (one byte per element, read from uint words by shifts, so
// no 8-bit storage feature is needed) is broadcast: its byte for the result
// coordinates c is at sum_d c_d * cstride[d] (stride 0 on broadcast axes).
// DT 0: elements are copied as 32-bit words, so f32 and i32 values select
// alike (the push value is an f32's bits), each invocation writing 4
// elements. DT 1 (f16) or 2 (bf16): elements two to a word, each invocation
// writing 4 words (the value rounded to DT to nearest even; past n a word's
// high half is 0).
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
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = w0 + e * 256u;
    if (DT == 0u) {
      if (w >= pc.n) return;
      y[w] = pick(w, a[w], b[w], floatBitsToUint(pc.value));
    } else {
      const uint i = 2u * w;
      if (i >= pc.n) return;
      const uint v = oa_narrow(pc.value, DT), aw = a[w], bw = b[w];
      const uint lo = pick(i, aw & 0xffffu, bw & 0xffffu, v);
      const uint hi = i + 1u < pc.n ? pick(i + 1u, aw >> 16, bw >> 16, v) : 0u;
      y[w] = lo | (hi << 16);
    }
  }
}
