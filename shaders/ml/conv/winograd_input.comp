#version 450
// Winograd F(2x2, 3x3) input transform (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016): V = B^T d B for the 4x4 source tile d
// of output tile t (output rows 2ty..2ty+1, columns 2tx..2tx+1; zero outside
// the source), with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. Writes
// v[(xi * c + ch) * tiles_pad + t] for xi = 4 * row + column of V, so that
// each xi is a [c, tiles_pad] GEMM operand; tiles past `tiles` are zero.
// Invocation: x = tile, workgroup y = channel.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer V { float v[]; };
#include "ml/conv/winograd.push.h"

// Row y of the source plane at `base`, columns x0..x0+3 (zero outside).
vec4 source_row(uint base, int y, int x0) {
  vec4 r = vec4(0.0);
  if (y < 0 || y >= int(pc.h)) return r;
  const uint row = base + uint(y) * pc.w;
  for (int j = 0; j < 4; ++j) {
    const int x = x0 + j;
    if (x >= 0 && x < int(pc.w)) r[j] = src[row + uint(x)];
  }
  return r;
}

void main() {
  const uint t = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  const uint ch = OA_GROUP_ID.y;
  if (t >= pc.tiles_pad) return;
  vec4 d0 = vec4(0.0), d1 = vec4(0.0), d2 = vec4(0.0), d3 = vec4(0.0);
  if (t < pc.tiles) {
    const uint img = t / pc.tiles_hw, rem = t - img * pc.tiles_hw;
    const uint ty = rem / pc.tiles_w, tx = rem - ty * pc.tiles_w;
    const int y0 = int(2u * ty) - pc.ph, x0 = int(2u * tx) - pc.pw;
    const uint base = (img * pc.c + ch) * pc.h * pc.w;
    d0 = source_row(base, y0, x0);
    d1 = source_row(base, y0 + 1, x0);
    d2 = source_row(base, y0 + 2, x0);
    d3 = source_row(base, y0 + 3, x0);
  }
  // B^T d (rows), then (B^T d) B (columns).
  const vec4 s[4] = vec4[4](d0 - d2, d1 + d2, d2 - d1, d1 - d3);
  const uint plane = pc.c * pc.tiles_pad;
  uint at = ch * pc.tiles_pad + t;
  [[unroll]] for (uint a = 0u; a < 4u; ++a) {
    const vec4 r = s[a];
    v[at] = r.x - r.z;
    v[at + plane] = r.y + r.z;
    v[at + 2u * plane] = r.z - r.y;
    v[at + 3u * plane] = r.y - r.w;
    at += 4u * plane;
  }
}
