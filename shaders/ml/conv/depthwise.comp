#version 450
// Direct depthwise convolution (depthwise.glsl), in one of three forms (FORM):
// 0: convolution, dst narrow from src wide;
// 1: a stride-1 transposed convolution (the gather form, also the
//    convolution's input gradient) as form 0 with the weights rotated by 180
//    degrees and padding (K - 1) * d - p (conv.cpp forms that relation);
// 2: a strided gather, dst wide from src narrow under the relation as it is.
//    Wide column x meets narrow column (x + pw - kw * dw) / sw through tap kw
//    only where sw divides; SW divides V and items start at multiples of V,
//    so with PW_RES = pw mod SW every (column, tap) match is known when the
//    kernel is compiled. Rows match at run time, one (row, kernel row) at a
//    time.
// Each invocation computes one item, R rows x 4 columns of dst; the plane's
// KH x KW weights stay in registers. Invocation i computes item i. Push aux0:
// strips per dst row, ceil(width / 4); aux1: row groups per plane,
// ceil(height / R).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/forward_io.glsl"
#define OA_DW_SRC(i) src[i]
#include "ml/conv/depthwise.glsl"

layout(std430, binding = 3) writeonly buffer Dst4 { vec4 dst4[]; };

layout(local_size_x = 128) in;
layout(constant_id = 7) const uint FORM = 0;
layout(constant_id = 8) const uint PW_RES = 0;  // form 2: pw mod SW
// Form 2: the narrow columns of an item run from q + LO to q + LO + GSPAN - 1,
// q = (x0 + pw - PW_RES) / SW (x0 the item's first column).
const int LO = (int(PW_RES) - int((KW - 1u) * DW) - int(SW) + 1) / int(SW);  // floor division
const uint GSPAN = uint((int(PW_RES) + int(V) - 1) / int(SW) - LO) + 1u;

void main() {
  const uvec3 item = dw_item(OA_GROUP_ID.x * 128u + gl_LocalInvocationID.x, pc.aux0, pc.aux1);
  const uint ox0 = item.x, oy0 = item.y, plane = item.z;  // plane = n * C + c
  if (plane >= pc.n * pc.cn) return;
  const uint c = plane % pc.cn;
  const uint out_h = FORM == 2u ? pc.hw : pc.hn, out_w = FORM == 2u ? pc.ww : pc.wn;

  float w[MAX_TAPS];
  [[unroll]] for (uint k = 0u; k < KH * KW; ++k) w[k] = wt[c * KH * KW + (FORM == 1u ? KH * KW - 1u - k : k)];
  float acc[MAX_R * V];
  [[unroll]] for (uint k = 0u; k < R * V; ++k) acc[k] = 0.0;

  if (FORM == 2u) {
    const int q = (int(ox0 + pc.pw) - int(PW_RES)) / int(SW);
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      [[unroll]] for (uint kh = 0u; kh < KH; ++kh) {
        const int ty = int(oy0 + r + pc.ph) - int(kh * DH);
        if (ty < 0 || ty % int(SH) != 0) continue;
        float x[MAX_SPAN];
        dw_window(plane * pc.hn * pc.wn, ty / int(SH), q + LO, pc.hn, pc.wn, GSPAN, x);
        [[unroll]] for (uint v = 0u; v < V; ++v) {
          [[unroll]] for (uint kw = 0u; kw < KW; ++kw) {
            const int t = int(PW_RES + v) - int(kw * DW) - LO * int(SW);  // non-negative
            if (t % int(SW) == 0) acc[r * V + v] += w[kh * KW + kw] * x[t / int(SW)];
          }
        }
      }
    }
  } else {
    const int iy0 = int(oy0 * SH) - int(pc.ph), ix0 = int(ox0 * SW) - int(pc.pw);
    [[unroll]] for (uint j = 0u; j < ROWS_IN; ++j) {
      float x[MAX_SPAN];
      dw_window(plane * pc.hw * pc.ww, iy0 + int(j), ix0, pc.hw, pc.ww, SPAN, x);
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
  }

  const float b = pc.has_bias != 0u ? bias[c] : 0.0;
  [[unroll]] for (uint r = 0u; r < R; ++r) {
    const uint oy = oy0 + r;
    if (oy >= out_h) break;
    const uint o = (plane * out_h + oy) * out_w + ox0;
    if (out_w % V == 0u) {  // uniform: every strip is a whole, aligned vec4
      dst4[o / V] = vec4(acc[r * V], acc[r * V + 1u], acc[r * V + 2u], acc[r * V + 3u]) + b;
    } else {
      [[unroll]] for (uint v = 0u; v < V; ++v) {
        if (ox0 + v < out_w) dst[o + v] = acc[r * V + v] + b;
      }
    }
  }
}
