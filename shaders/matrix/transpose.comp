#version 450
// Batched transpose through shared memory: Y_b = X_b^T for X_b [R, C]
// row-major (Y_b [C, R]), a copy of bits: SIZE 4 moves 32-bit elements, SIZE 2
// 16-bit ones (f16, bf16) packed two to a word. Batch item = OA_GROUP_ID.z;
// x_off and y_off count elements.
//   SIZE 4: a workgroup moves a 32 x 32 tile: coalesced reads of X rows into
//     a padded tile (33 words per row: no bank conflicts), then coalesced
//     writes of Y rows from the tile's columns.
//   SIZE 2: a 64 x 32 tile (64 rows of X), so that each invocation writes one
//     whole word of Y: the two elements of rows r, r + 1 in one column. The
//     host passes R even and y_off even, so those words hold no element of
//     another row or batch item.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(constant_id = 0) const uint SIZE = 4;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
#include "matrix/transpose.push.h"

const uint ROWS = SIZE == 2u ? 64u : 32u;  // rows of X a workgroup reads
shared uint tile[ROWS][33];

uint element(uint e) { return SIZE == 2u ? (x[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu : x[e]; }

void main() {
  const uvec3 group = OA_GROUP_ID;
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint r0 = group.y * ROWS, c0 = group.x * 32u, base = group.z * pc.R * pc.C;
  for (uint j = ly; j < ROWS; j += 8u) {
    const uint r = r0 + j, c = c0 + lx;
    if (r < pc.R && c < pc.C) tile[j][lx] = element(pc.x_off + base + r * pc.C + c);
  }
  barrier();
  for (uint j = ly; j < 32u; j += 8u) {
    const uint c = c0 + j;
    if (SIZE == 2u) {
      const uint r = r0 + 2u * lx;
      if (c < pc.C && r < pc.R) y[(pc.y_off + base + c * pc.R + r) >> 1] = tile[2u * lx][j] | (tile[2u * lx + 1u][j] << 16);
    } else {
      const uint r = r0 + lx;
      if (c < pc.C && r < pc.R) y[pc.y_off + base + c * pc.R + r] = tile[lx][j];
    }
  }
}
