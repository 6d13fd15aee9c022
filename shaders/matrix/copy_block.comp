#version 450
// Copies a block of `rows` rows of `cols` consecutive elements between two
// row-strided layouts: dst[dst_offset + r * dst_stride + c] =
// src[src_offset + r * src_stride + c]. The copies of concat and chunk. Each
// invocation copies 4 elements; consecutive invocations touch consecutive
// elements of a row.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
#include "matrix/copy_block.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;
    if (i >= pc.n) return;
    const uint r = i / pc.cols;
    const uint c = i - r * pc.cols;
    dst[pc.dst_offset + r * pc.dst_stride + c] = src[pc.src_offset + r * pc.src_stride + c];
  }
}
