#version 450
// Winograd F(2x2, 3x3) output transform (Lavin & Gray 2016): the 2x2 output
// tile Y = A^T m A (+ bias) of output channel k and tile t, from m[xi] =
// products[(xi * k_pad + k) * tiles_pad + t] (the 16 GEMMs' results), with
// A^T = [1 1 1 0; 0 1 -1 -1]; stores the part of Y inside [oh, ow] into the
// NCHW output. Invocation: x = tile, workgroup y = output channel.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Products { float products[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };
#include "ml/conv/winograd.push.h"

void main() {
  const uint t = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  const uint k = OA_GROUP_ID.y;
  if (t >= pc.tiles) return;
  const uint plane = pc.k_pad * pc.tiles_pad;
  const uint at = k * pc.tiles_pad + t;
  vec4 m[4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a)
    m[a] = vec4(products[at + (4u * a) * plane], products[at + (4u * a + 1u) * plane], products[at + (4u * a + 2u) * plane],
                products[at + (4u * a + 3u) * plane]);
  // A^T m (rows), then (A^T m) A (columns).
  const vec4 p0 = m[0] + m[1] + m[2], p1 = m[1] - m[2] - m[3];
  const float b = pc.has_bias != 0u ? bias[k] : 0.0;
  const vec2 y0 = vec2(p0.x + p0.y + p0.z, p0.y - p0.z - p0.w) + b;
  const vec2 y1 = vec2(p1.x + p1.y + p1.z, p1.y - p1.z - p1.w) + b;
  const uint img = t / pc.tiles_hw, rem = t - img * pc.tiles_hw;
  const uint ty = rem / pc.tiles_w, tx = rem - ty * pc.tiles_w;
  const uint oy = 2u * ty, ox = 2u * tx;
  const uint row = ((img * pc.k + k) * pc.oh + oy) * pc.ow + ox;
  const bool right = ox + 1u < pc.ow;
  dst[row] = y0.x;
  if (right) dst[row + 1u] = y0.y;
  if (oy + 1u < pc.oh) {
    dst[row + pc.ow] = y1.x;
    if (right) dst[row + pc.ow + 1u] = y1.y;
  }
}
