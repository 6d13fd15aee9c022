#version 450
// Weight gradient of a depthwise convolution (depthwise.glsl):
//   dW[c, kh, kw] = sum over n, yn, xn of dn[n, c, yn, xn] * xw[n, c, yn*sh - ph + kh*dh, xn*sw - pw + kw*dw]
// Workgroup (x = split, y = channel c) takes items split * aux2 up to
// (split + 1) * aux2 of the channel's N planes (item = (n, row group, strip),
// n slowest). Each invocation accumulates the KH x KW sums in registers over
// every 128th item: the item's R x 4 narrow values against each wide row it
// reaches. The workgroup then adds its invocations' sums (common/reduce.glsl),
// one tap at a time, in a fixed order (no atomics). Splits write partial
// results C * KH * KW floats apart, which ml/conv/reduce sums in split order.
// Push aux0: strips per row, ceil(WN / 4); aux1: row groups per plane,
// ceil(HN / R); aux2: items per split.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/wgrad_io.glsl"
#define OA_DW_SRC(i) xw[i]
#include "ml/conv/depthwise.glsl"
#include "common/reduce.glsl"

layout(local_size_x = 128) in;

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint split = OA_GROUP_ID.x, c = OA_GROUP_ID.y;
  const uint items = pc.n * pc.aux1 * pc.aux0;
  const uint end = min(items, (split + 1u) * pc.aux2);

  float acc[MAX_TAPS];
  [[unroll]] for (uint k = 0u; k < KH * KW; ++k) acc[k] = 0.0;
  for (uint i = split * pc.aux2 + tid; i < end; i += 128u) {
    const uvec3 item = dw_item(i, pc.aux0, pc.aux1);
    const uint ox0 = item.x, oy0 = item.y, plane = item.z * pc.cn + c;  // item.z = n
    // The item's narrow values, zero past the plane's edges.
    float d[MAX_R * V];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      const uint o = (plane * pc.hn + oy0 + r) * pc.wn + ox0;
      [[unroll]] for (uint v = 0u; v < V; ++v) d[r * V + v] = oy0 + r < pc.hn && ox0 + v < pc.wn ? dn[o + v] : 0.0;
    }
    const int iy0 = int(oy0 * SH) - int(pc.ph), ix0 = int(ox0 * SW) - int(pc.pw);
    [[unroll]] for (uint j = 0u; j < ROWS_IN; ++j) {
      float x[MAX_SPAN];
      dw_window(plane * pc.hw * pc.ww, iy0 + int(j), ix0, pc.hw, pc.ww, SPAN, x);
      // Narrow row r meets wide row j through kernel row kh where r * SH + kh * DH = j.
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        [[unroll]] for (uint kh = 0u; kh < KH; ++kh) {
          if (r * SH + kh * DH != j) continue;
          [[unroll]] for (uint kw = 0u; kw < KW; ++kw) {
            [[unroll]] for (uint v = 0u; v < V; ++v) acc[kh * KW + kw] += d[r * V + v] * x[v * SW + kw * DW];
          }
        }
      }
    }
  }

  [[unroll]] for (uint k = 0u; k < KH * KW; ++k) {
    const float s = oa_workgroup_sum(acc[k]);
    if (tid == 0u) dw[split * pc.cn * KH * KW + c * KH * KW + k] = s;
  }
}
