#version 450
// Column sums of X [R, C] (row-major) over blocks of 256 rows: Y[g][c] = sum of
// X[r][c] for r in [g * 256, min(R, (g + 1) * 256)), g = OA_GROUP_ID.y. A
// workgroup covers 32 adjacent columns (coalesced reads along a row); its 8
// invocations per column fold every 8th row of the block, then
// the 8 partial sums are added (common/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "matrix/reduce_cols.push.h"

void main() {
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uvec3 group = OA_GROUP_ID;
  const uint c = group.x * 32u + lx, rbeg = group.y * 256u, rend = min(pc.R, rbeg + 256u);
  float acc = 0.0;
  if (c < pc.C)
    for (uint r = rbeg + ly; r < rend; r += 8u) acc += x[pc.x_off + r * pc.C + c];
  acc = oa_segment_sum(acc, 32u, 8u);  // the 8 invocations of column lx
  if (ly == 0u && c < pc.C) y[pc.y_off + group.y * pc.C + c] = acc;
}
