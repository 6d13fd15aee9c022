#version 450
// Input gradient of pool2d.comp in gather form (no atomics): one invocation
// per input element (ih, iw) of dx [P, H, W] sums the output gradients of the
// windows that cover it, rows oh with oh * SH - PH <= ih < oh * SH - PH + KH
// (likewise columns):
//   MAX: dy[oh, ow] where the saved index of (oh, ow) is ih * W + iw;
//   AVG: dy[oh, ow] / (KH * KW).
// The window loop visits at most ceil(KH / SH) * ceil(KW / SW) outputs.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool MAX = true;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) writeonly buffer DX { float dx[]; };
#include "ml/nn/pool2d.push.h"

// The first output index whose window (start o * S - P, length K) reaches i, and one past the last.
ivec2 covering(int i, int K, int S, int P, int O) {
  const int lo = i + P - K + 1;
  const int first = lo <= 0 ? 0 : (lo + S - 1) / S;
  const int last = min((i + P) / S, O - 1);
  return ivec2(first, last + 1);
}

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const int iw = int(e % pc.W), ih = int((e / pc.W) % pc.H);
  const uint plane = e / (pc.W * pc.H), obase = plane * pc.OH * pc.OW;
  const ivec2 hr = covering(ih, pc.KH, pc.SH, pc.PH, int(pc.OH)), wr = covering(iw, pc.KW, pc.SW, pc.PW, int(pc.OW));
  const int self = ih * int(pc.W) + iw;
  float s = 0.0;
  for (int oh = hr.x; oh < hr.y; ++oh)
    for (int ow = wr.x; ow < wr.y; ++ow) {
      const uint o = obase + uint(oh) * pc.OW + uint(ow);
      if (!MAX) s += dy[o];
      else if (index[o] == self) s += dy[o];
    }
  dx[e] = MAX ? s : s / (float(pc.KH) * float(pc.KW));
}
