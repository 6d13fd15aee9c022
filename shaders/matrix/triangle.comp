#version 450
// y = x with the elements outside a triangle of each [rows, cols] matrix (the
// last two axes) set to 0 (oa::matrix::tril, triu and their backward): element
// (r, c) is kept when c - r <= diagonal (UPPER 0, tril) or c - r >= diagonal
// (UPPER 1, triu). x and y are this chunk's elements, from global element
// `base`; 32-bit words of f32 or i32 (zero is the 0 word for both).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint UPPER = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
#include "matrix/triangle.push.h"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    const uint g = pc.base + i, c = g % pc.cols, r = (g / pc.cols) % pc.rows;
    const int offset = int(c) - int(r);
    const bool keep = UPPER == 1u ? offset >= pc.diagonal : offset <= pc.diagonal;
    y[i] = keep ? x[i] : 0u;
  }
}
