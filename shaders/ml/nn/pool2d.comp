#version 450
// 2-D max and average pooling over x [P, H, W] (P = N * C planes) giving
// y [P, OH, OW]: output (oh, ow) covers rows oh * SH - PH + [0, KH) and
// columns ow * SW - PW + [0, KW) of the zero/-inf padded plane.
//   MAX: the maximum over the window's in-bounds elements (a NaN wins, as
//     torch.nn.functional.max_pool2d), and its index ih * W + iw within the
//     plane (the first maximum in row-major order, the last NaN) for the
//     backward pass.
//   AVG: the sum of the window's in-bounds elements divided by KH * KW
//     (count_include_pad; every window lies inside the padded plane).
// One invocation per output element. AVG leaves `index` (a placeholder) untouched.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool MAX = true;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer Index { int index[]; };
#include "ml/nn/pool2d.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint ow = e % pc.OW, oh = (e / pc.OW) % pc.OH, plane = e / (pc.OW * pc.OH);
  const int h0 = int(oh) * pc.SH - pc.PH, w0 = int(ow) * pc.SW - pc.PW;
  const int hb = max(h0, 0), he = min(h0 + pc.KH, int(pc.H)), wb = max(w0, 0), we = min(w0 + pc.KW, int(pc.W));
  const uint base = plane * pc.H * pc.W;
  if (MAX) {
    float best = -OA_INF;
    int at = hb * int(pc.W) + wb;
    for (int ih = hb; ih < he; ++ih)
      for (int iw = wb; iw < we; ++iw) {
        const int i = ih * int(pc.W) + iw;
        const float v = x[base + uint(i)];
        if (v > best || isnan(v)) {
          best = v;
          at = i;
        }
      }
    y[e] = best;
    index[e] = at;
  } else {
    float s = 0.0;
    for (int ih = hb; ih < he; ++ih)
      for (int iw = wb; iw < we; ++iw) s += x[base + uint(ih * int(pc.W) + iw)];
    y[e] = s / (float(pc.KH) * float(pc.KW));
  }
}
