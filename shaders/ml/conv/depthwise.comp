#version 450
// Direct depthwise convolution: one input and one output channel per group
// (groups = C), weight [C, 1, KH, KW]; dst is the narrow side [N, C, HN, WN],
// src the wide side [N, C, HW, WW] (geometry.glsl). Each invocation computes
// R output rows x V = 4 consecutive columns of one plane (n, c). It walks the
// input rows its outputs reach, reads each row's window straight from global
// memory into registers (the caches serve the overlap between neighbours),
// and adds every tap that meets that row; the plane's KH x KW weights stay in
// registers. Taps, strides, dilations and R are specialization constants, so
// the loops unroll into register arithmetic. FLIP = 1 reads the weights
// rotated by 180 degrees: a stride-1 transposed depthwise convolution (the
// gather form, also the convolution's input gradient) is this convolution
// with padding (K - 1) * d - p (conv.cpp forms that relation).
// Invocation i covers strip i % aux0 of row group (i / aux0) % aux1 of plane
// i / (aux0 * aux1). Push aux0: strips per row, ceil(WN / V); aux1: row groups
// per plane, ceil(HN / R).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/forward_io.glsl"

layout(std430, binding = 3) writeonly buffer Dst4 { vec4 dst4[]; };

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KH = 3;
layout(constant_id = 1) const uint KW = 3;
layout(constant_id = 2) const uint SH = 1;
layout(constant_id = 3) const uint SW = 1;
layout(constant_id = 4) const uint DH = 1;
layout(constant_id = 5) const uint DW = 1;
layout(constant_id = 6) const uint R = 1;  // output rows per invocation
layout(constant_id = 7) const uint FLIP = 0;
const uint V = 4u;  // output columns per invocation
// Register capacities (conv.cpp keeps every problem within them).
const uint MAX_TAPS = 64u, MAX_SPAN = 32u, MAX_R = 4u;
const uint SPAN = (V - 1u) * SW + (KW - 1u) * DW + 1u;     // input columns of one strip
const uint ROWS_IN = (R - 1u) * SH + (KH - 1u) * DH + 1u;  // input rows of one invocation

void main() {
  const uint i = OA_GROUP_ID.x * 128u + gl_LocalInvocationID.x;
  const uint strip = i % pc.aux0, rows = i / pc.aux0;
  const uint plane = rows / pc.aux1;  // n * C + c
  if (plane >= pc.n * pc.cn) return;
  const uint c = plane % pc.cn;
  const uint oy0 = (rows - plane * pc.aux1) * R, ox0 = strip * V;

  float w[MAX_TAPS];
  [[unroll]] for (uint k = 0u; k < KH * KW; ++k) w[k] = wt[c * KH * KW + (FLIP != 0u ? KH * KW - 1u - k : k)];
  float acc[MAX_R * V];
  [[unroll]] for (uint k = 0u; k < R * V; ++k) acc[k] = 0.0;

  const int iy0 = int(oy0 * SH) - int(pc.ph), ix0 = int(ox0 * SW) - int(pc.pw);
  const uint src_plane = plane * pc.hw * pc.ww;
  [[unroll]] for (uint j = 0u; j < ROWS_IN; ++j) {
    const int iy = iy0 + int(j);
    if (iy < 0 || iy >= int(pc.hw)) continue;  // a padding row adds nothing
    const uint row = src_plane + uint(iy) * pc.ww;
    float x[MAX_SPAN];
    [[unroll]] for (uint e = 0u; e < SPAN; ++e) {
      const int ix = ix0 + int(e);
      x[e] = ix >= 0 && ix < int(pc.ww) ? src[row + uint(ix)] : 0.0;
    }
    // Output row r meets this input row through kernel row kh where r * SH + kh * DH = j.
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      [[unroll]] for (uint kh = 0u; kh < KH; ++kh) {
        if (r * SH + kh * DH != j) continue;
        [[unroll]] for (uint v = 0u; v < V; ++v) {
          [[unroll]] for (uint kw = 0u; kw < KW; ++kw) acc[r * V + v] += w[kh * KW + kw] * x[v * SW + kw * DW];
        }
      }
    }
  }

  const float b = pc.has_bias != 0u ? bias[c] : 0.0;
  [[unroll]] for (uint r = 0u; r < R; ++r) {
    const uint oy = oy0 + r;
    if (oy >= pc.hn) break;
    const uint o = (plane * pc.hn + oy) * pc.wn + ox0;
    if (pc.wn % V == 0u) {  // uniform: every strip is a whole, aligned vec4
      dst4[o / V] = vec4(acc[r * V], acc[r * V + 1u], acc[r * V + 2u], acc[r * V + 3u]) + b;
    } else {
      [[unroll]] for (uint v = 0u; v < V; ++v) {
        if (ox0 + v < pc.wn) dst[o + v] = acc[r * V + v] + b;
      }
    }
  }
}
