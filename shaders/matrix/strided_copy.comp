#version 450
// Strided copy over up to 8 axes. Element i of the contiguous side, row-major
// over the extents ext[0..rank), has the coordinates c_d and the strided index
// s = base + sum_d c_d * stride[d]:
//   SCATTER 0: dst[i] = src[s]   (permute, slice, expand: a gather from x)
//   SCATTER 1: dst[s] = src[i]   (the backward of slice, into zeros)
// Unused axes have extent 1 and stride 0. HALF 0: 32-bit elements (f32 or i32
// bits), each invocation copies 4. HALF 1: 16-bit elements (f16 or bf16 bits,
// two to a word, the last word's high half zero for an odd count): a gather
// writes 4 words of dst an invocation; a scatter 4 elements, each ORed into
// its half of a dst word (dst is zero-filled first, and its other half may be
// another invocation's).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint SCATTER = 0;
layout(constant_id = 1) const uint HALF = 0;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) buffer Out { uint dst[]; };
#include "matrix/strided_copy.push.h"

// The strided index of contiguous element i.
uint strided(uint i) {
  uint rest = i, s = pc.base;
  for (int d = 7; d >= 0; --d) {
    const uint c = rest % pc.ext[d];
    rest /= pc.ext[d];
    s += c * pc.stride[d];
  }
  return s;
}

// The 16 bits of element e of src.
uint half_bits(uint e) { return (src[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu; }

void main() {
  const uint u0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint units = HALF == 1u && SCATTER == 0u ? (pc.n + 1u) / 2u : pc.n;  // dst words of a 16-bit gather
  for (uint e = 0u; e < 4u; ++e) {
    const uint u = u0 + e * 256u;
    if (u >= units) return;
    if (HALF == 0u) {
      const uint s = strided(u);
      if (SCATTER == 1u) dst[s] = src[u];
      else dst[u] = src[s];
    } else if (SCATTER == 1u) {
      const uint s = strided(u);
      atomicOr(dst[s >> 1], half_bits(u) << ((s & 1u) * 16u));
    } else {
      const uint i = 2u * u;
      dst[u] = half_bits(strided(i)) | (i + 1u < pc.n ? half_bits(strided(i + 1u)) << 16 : 0u);
    }
  }
}
