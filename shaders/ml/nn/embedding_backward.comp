#version 450
// Weight gradient of the embedding lookup as a segmented reduction over the
// sorted (index, position) pairs of embedding_sort.comp (no atomics):
// dweight[v, d] = sum of dy[p, d] over the positions p with indices[p] == v,
// in increasing p. A workgroup serves vocabulary row v and 32 adjacent
// columns: it finds v's run of pairs by binary search, its 8 invocations per
// column fold every 8th pair of the run, and the 8 partial sums are added
// (common/reduce.glsl). Rows no index selects get zeros.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, binding = 0) readonly buffer Pairs { uvec2 pairs[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) writeonly buffer DW { float dw[]; };
#include "ml/nn/embedding_backward.push.h"

// The first pair whose key is not below v.
uint lower_bound(uint v) {
  uint lo = 0u, hi = pc.N;
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2u;
    if (pairs[mid].x < v) lo = mid + 1u;
    else hi = mid;
  }
  return lo;
}

void main() {
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint g = OA_GROUP_ID.x, v = g / pc.tiles, d = (g % pc.tiles) * 32u + lx;
  const uint begin = lower_bound(v), end = lower_bound(v + 1u);
  float acc = 0.0;
  if (d < pc.D)
    for (uint t = begin + ly; t < end; t += 8u) acc += dy[pairs[t].y * pc.D + d];
  acc = oa_segment_sum(acc, 32u, 8u);  // the 8 invocations of column lx
  if (ly == 0u && d < pc.D) dw[v * pc.D + d] = acc;
}
