#version 450
// Strided copy of 32-bit elements (f32 or i32) over up to 8 axes. Element i of
// the contiguous side, row-major over the extents ext[0..rank), has the
// coordinates c_d and the strided index s = base + sum_d c_d * stride[d]:
//   SCATTER 0: dst[i] = src[s]   (permute, slice: a gather from x)
//   SCATTER 1: dst[s] = src[i]   (the backward of slice, into zeros)
// Unused axes have extent 1 and stride 0. Each invocation copies 4 elements.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint SCATTER = 0;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
#include "matrix/strided_copy.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;
    if (i >= pc.n) return;
    uint rest = i, s = pc.base;
    for (int d = 7; d >= 0; --d) {
      const uint c = rest % pc.ext[d];
      rest /= pc.ext[d];
      s += c * pc.stride[d];
    }
    if (SCATTER == 1u) dst[s] = src[i];
    else dst[i] = src[s];
  }
}
