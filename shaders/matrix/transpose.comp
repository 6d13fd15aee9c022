#version 450
// Batched transpose through shared memory: Y_b = X_b^T for X_b [R, C]
// row-major (Y_b [C, R]). A workgroup moves one 32 x 32 tile: coalesced reads
// of X rows into a padded tile (33 floats per row: no bank conflicts), then
// coalesced writes of Y rows from the tile's columns. Batch item = OA_GROUP_ID.z.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "matrix/transpose.push.h"

shared float tile[32][33];

void main() {
  const uvec3 group = OA_GROUP_ID;
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint r0 = group.y * 32u, c0 = group.x * 32u, base = group.z * pc.R * pc.C;
  for (uint j = ly; j < 32u; j += 8u) {
    const uint r = r0 + j, c = c0 + lx;
    if (r < pc.R && c < pc.C) tile[j][lx] = x[pc.x_off + base + r * pc.C + c];
  }
  barrier();
  for (uint j = ly; j < 32u; j += 8u) {
    const uint c = c0 + j, r = r0 + lx;
    if (c < pc.C && r < pc.R) y[pc.y_off + base + c * pc.R + r] = tile[lx][j];
  }
}
