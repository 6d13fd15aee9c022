#version 450
// Strided copy over up to 8 axes. Element i of the contiguous side, row-major
// over the extents ext[0..rank), has the coordinates c_d and the strided index
// s = base + sum_d c_d * stride[d]:
//   SCATTER 0: dst[i] = src[s]   (permute, slice, expand: a gather from x)
//   SCATTER 1: dst[s] = src[i]   (the backward of slice, into zeros)
// Unused axes have extent 1 and stride 0. SIZE: the element's bytes, 4 (f32
// or i32 bits), 2 (f16 or bf16 bits) or 1 (bool bytes); PER = 4 / SIZE
// elements share a word, the last word's unused high bytes zero. A gather
// writes 4 words of dst an invocation (PER elements each); a scatter 4
// elements, a 16-bit or byte one ORed into its part of a dst word (dst is
// zero-filled first, and its other parts may be another invocation's).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint SCATTER = 0;
layout(constant_id = 1) const uint SIZE = 4;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) buffer Out { uint dst[]; };
#include "matrix/strided_copy.push.h"

const uint PER = 4u / SIZE, BITS = 8u * SIZE;

// The strided index of contiguous element i. Axes of extent 1 are skipped
// (a uniform branch): their quotient and remainder would cost two integer
// divisions an element for nothing.
uint strided(uint i) {
  uint rest = i, s = pc.base;
  for (int d = 7; d >= 0; --d) {
    if (pc.ext[d] == 1u) continue;
    const uint c = rest % pc.ext[d];
    rest /= pc.ext[d];
    s += c * pc.stride[d];
  }
  return s;
}

// The bits of element e of src.
uint element(uint e) { return PER == 1u ? src[e] : (src[e / PER] >> (e % PER * BITS)) & (0xffffffffu >> (32u - BITS)); }

void main() {
  const uint u0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  const uint units = SCATTER == 0u ? (pc.n + PER - 1u) / PER : pc.n;  // dst words of a gather
  for (uint e = 0u; e < 4u; ++e) {
    const uint u = u0 + e * 256u;
    if (u >= units) return;
    if (SCATTER == 1u) {
      const uint s = strided(u);
      if (PER == 1u) dst[s] = src[u];
      else atomicOr(dst[s / PER], element(u) << (s % PER * BITS));
    } else {
      uint w = 0u;
      for (uint k = 0u; k < PER && PER * u + k < pc.n; ++k) w |= element(strided(PER * u + k)) << (k * BITS);
      dst[u] = w;
    }
  }
}
