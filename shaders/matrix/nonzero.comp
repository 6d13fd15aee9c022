#version 450
// The coordinates of the true elements of a bool x (torch.nonzero), in
// row-major order: x's n bytes are read from uint words by shifts (no 8-bit
// storage feature) in blocks of 1024 elements, a workgroup of 256
// invocations a block, 4 elements (one word) an invocation.
//   PASS 0: count[g] = the true elements of block g.
//   PASS 1 (one workgroup): count[] becomes its exclusive prefix sum, each
//           block's first result row.
//   PASS 2: block g's true elements, numbered in order from count[g], write
//           their coordinates over x's extents ext[0..rank) as row k of the
//           result: y[k * rank + d] = coordinate d.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { uint words[]; };
layout(std430, binding = 1) buffer Count { uint count[]; };
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
#include "matrix/nonzero.push.h"

shared uint partial[256];

// The sum of v over the workgroup's invocations before this one (called by
// every invocation); partial[255] then holds the workgroup's total.
uint exclusive_sum(uint v) {
  const uint i = gl_LocalInvocationID.x;
  partial[i] = v;
  barrier();
  for (uint step = 1u; step < 256u; step *= 2u) {
    const uint add = i >= step ? partial[i - step] : 0u;
    barrier();
    partial[i] += add;
    barrier();
  }
  return partial[i] - v;
}

// Bit k set when element 4 w + k (below n) is true, for this invocation's word w of block g.
uint flags(uint g) {
  const uint w = g * 256u + gl_LocalInvocationID.x;
  uint f = 0u;
  if (w >= (pc.n + 3u) / 4u) return f;
  const uint word = words[w];
  for (uint k = 0u; k < 4u && 4u * w + k < pc.n; ++k)
    if (((word >> (8u * k)) & 0xffu) != 0u) f |= 1u << k;
  return f;
}

void main() {
  const uint g = OA_GROUP_ID.x, lane = gl_LocalInvocationID.x;
  if (PASS == 0u) {
    exclusive_sum(bitCount(flags(g)));
    if (lane == 255u) count[g] = partial[255];
  } else if (PASS == 1u) {
    const uint per = (pc.blocks + 255u) / 256u, first = lane * per, last = min(first + per, pc.blocks);
    uint sum = 0u;
    for (uint j = first; j < last; ++j) sum += count[j];
    uint row = exclusive_sum(sum);
    for (uint j = first; j < last; ++j) {
      const uint c = count[j];
      count[j] = row;
      row += c;
    }
  } else {
    const uint f = flags(g);
    uint row = count[g] + exclusive_sum(bitCount(f));
    for (uint k = 0u; k < 4u; ++k) {
      if ((f & (1u << k)) == 0u) continue;
      uint rest = (g * 256u + lane) * 4u + k;
      for (uint d = pc.rank; d-- > 0u;) {
        y[row * pc.rank + d] = int(rest % pc.ext[d]);
        rest /= pc.ext[d];
      }
      ++row;
    }
  }
}
