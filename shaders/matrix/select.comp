#version 450
// Elementwise selection for where and masked_fill (and their backward):
// y[i] = cond(i) ? A(i) : B(i), with A = a[i] (or the push value when
// FLAGS bit 0 is set) and B = b[i] (or the value when bit 1 is set). a, b and
// y are contiguous over the result's extents ext[0..8) (unused leading axes 1);
// the Bool condition (one byte per element, read from uint words by shifts, so
// no 8-bit storage feature is needed) is broadcast: its byte for the result
// coordinates c is at sum_d c_d * cstride[d] (stride 0 on broadcast axes).
// Elements are copied as 32-bit words, so f32 and i32 values select alike
// (the push value is an f32's bits). Each invocation writes 4 elements.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Cond { uint words[]; };
layout(std430, binding = 1) readonly buffer A { uint a[]; };
layout(std430, binding = 2) readonly buffer B { uint b[]; };
layout(std430, binding = 3) writeonly buffer Out { uint y[]; };
#include "matrix/select.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;
    if (i >= pc.n) return;
    uint rest = i, s = 0u;
    for (int d = 7; d >= 0; --d) {
      s += (rest % pc.ext[d]) * pc.cstride[d];
      rest /= pc.ext[d];
    }
    const bool c = ((words[s / 4u] >> (8u * (s % 4u))) & 0xffu) != 0u;
    const uint value = floatBitsToUint(pc.value);
    if (c) y[i] = (pc.flags & 1u) != 0u ? value : a[i];
    else y[i] = (pc.flags & 2u) != 0u ? value : b[i];
  }
}
