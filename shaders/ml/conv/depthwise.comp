#version 450
// Direct depthwise convolution (depthwise.glsl): dst is the narrow side, src
// the wide side. Each invocation computes one item, R rows x 4 columns of
// outputs, adding every tap that meets each wide row it reads; the plane's
// KH x KW weights stay in registers. FLIP = 1 reads the weights rotated by
// 180 degrees: a stride-1 transposed depthwise convolution (the gather form,
// also the convolution's input gradient) is this convolution with padding
// (K - 1) * d - p (conv.cpp forms that relation). Invocation i computes item
// i. Push aux0: strips per row, ceil(WN / 4); aux1: row groups per plane,
// ceil(HN / R).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/forward_io.glsl"
#define OA_DW_WIDE(i) src[i]
#include "ml/conv/depthwise.glsl"

layout(std430, binding = 3) writeonly buffer Dst4 { vec4 dst4[]; };

layout(local_size_x = 128) in;
layout(constant_id = 7) const uint FLIP = 0;

void main() {
  const uvec3 item = dw_item(OA_GROUP_ID.x * 128u + gl_LocalInvocationID.x, pc.aux0, pc.aux1);
  const uint ox0 = item.x, oy0 = item.y, plane = item.z;  // plane = n * C + c
  if (plane >= pc.n * pc.cn) return;
  const uint c = plane % pc.cn;

  float w[MAX_TAPS];
  [[unroll]] for (uint k = 0u; k < KH * KW; ++k) w[k] = wt[c * KH * KW + (FLIP != 0u ? KH * KW - 1u - k : k)];
  float acc[MAX_R * V];
  [[unroll]] for (uint k = 0u; k < R * V; ++k) acc[k] = 0.0;

  const int iy0 = int(oy0 * SH) - int(pc.ph), ix0 = int(ox0 * SW) - int(pc.pw);
  [[unroll]] for (uint j = 0u; j < ROWS_IN; ++j) {
    float x[MAX_SPAN];
    dw_window(plane * pc.hw * pc.ww, iy0 + int(j), ix0, x);
    // Output row r meets wide row j through kernel row kh where r * SH + kh * DH = j.
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
