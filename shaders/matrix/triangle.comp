#version 450
// y = x with the elements outside a triangle of each [rows, cols] matrix (the
// last two axes) set to 0 (oa::matrix::tril, triu and their backward): element
// (r, c) is kept when c - r <= diagonal (UPPER 0, tril) or c - r >= diagonal
// (UPPER 1, triu). x and y are this chunk's elements, from global element
// `base`, moved as bits (zero is the 0 pattern of every dtype): SIZE is the
// element's bytes, 4 (f32, i32), 2 (f16, bf16) or 1 (bool), PER = 4 / SIZE
// elements to a 32-bit word; each invocation writes 4 words.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint UPPER = 0;
layout(constant_id = 1) const uint SIZE = 4;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
#include "matrix/triangle.push.h"

const uint PER = 4u / SIZE, BITS = 8u * SIZE, MASK = 0xffffffffu >> (32u - BITS);

void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = w0 + e * 256u;
    if (PER * w >= pc.n) return;
    uint kept = 0u;
    for (uint k = 0u; k < PER && PER * w + k < pc.n; ++k) {
      const uint g = pc.base + PER * w + k, c = g % pc.cols, r = (g / pc.cols) % pc.rows;
      const int offset = int(c) - int(r);
      if (UPPER == 1u ? offset >= pc.diagonal : offset <= pc.diagonal) kept |= MASK << (k * BITS);
    }
    y[w] = x[w] & kept;
  }
}
