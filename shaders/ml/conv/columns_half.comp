#version 450
// The layout passes around the GEMMs of the 16-bit convolutions
// (src/ml/conv.cpp, lower_conv_half): they move a chunk of pc.n images
// between the activation layout [n, c, h, w] and the column layout
// [rows, n * positions] that the GEMMs read and write (an image's positions
// contiguous, images side by side). Geometry as ml/conv/geometry.glsl;
// P = hn * wn narrow positions, Q = pc.n * P columns, R = cw * kh * kw rows
// (input channel, tap row, tap column).
//   MODE 0 (im2col): cols[R, Q] (16-bit) from the wide chunk (16-bit);
//                    taps outside the wide tensor give 0.
//   MODE 1 (gather): rows[cn, Q] (16-bit) from the narrow chunk (16-bit).
//   MODE 2 (narrow): the narrow chunk (16-bit) from f32 rows[cn, Q], plus
//                    bias[c], rounded once.
//   MODE 3 (col2im): the wide chunk (16-bit) from f32 cols[R, Q]: the sum of
//                    every tap that reaches the element, plus bias[c],
//                    rounded once.
// 16-bit elements are two to a word (common/half_io.glsl); invocation
// w writes word w of dst (elements 2w and 2w + 1 of its window), so no two
// invocations share a word. aux0 and aux1 are the word offsets of src and
// dst in their bindings, aux2 the element count of dst; past it a word's
// high half is 0.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint DTYPE = 1;  // 1 f16, 2 bf16
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) readonly buffer Bias { uint bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { uint dst[]; };
#include "ml/conv/geometry.push.h"

// Element e of a 16-bit src.
float half_src(uint e) { return oa_half_at(src[pc.aux0 + (e >> 1)], e, DTYPE); }

float bias_of(uint c) { return pc.has_bias != 0u ? oa_half_at(bias[c >> 1], c, DTYPE) : 0.0; }

float element(uint e) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count;
  if (MODE == 0u) {
    const uint row = e / q, col = e % q, b = col / p_count, p = col % p_count;
    const uint taps = pc.kh * pc.kw, c = row / taps, t = row % taps;
    const int y = int((p / pc.wn) * pc.sh + (t / pc.kw) * pc.dh) - int(pc.ph);
    const int x = int((p % pc.wn) * pc.sw + (t % pc.kw) * pc.dw) - int(pc.pw);
    if (y < 0 || x < 0 || y >= int(pc.hw) || x >= int(pc.ww)) return 0.0;
    return half_src(((b * pc.cw + c) * pc.hw + uint(y)) * pc.ww + uint(x));
  }
  if (MODE == 1u) {
    const uint c = e / q, col = e % q, b = col / p_count;
    return half_src((b * pc.cn + c) * p_count + col % p_count);
  }
  if (MODE == 2u) {
    const uint b = e / (pc.cn * p_count), c = (e / p_count) % pc.cn;
    return uintBitsToFloat(src[pc.aux0 + c * q + b * p_count + e % p_count]) + bias_of(c);
  }
  // MODE 3: wide element (b, c, y, x); tap (ky, kx) reaches it from narrow
  // (yn, xn) where yn * sh = y + ph - ky * dh.
  const uint plane = pc.hw * pc.ww, b = e / (pc.cw * plane), c = (e / plane) % pc.cw;
  const int y = int((e % plane) / pc.ww) + int(pc.ph), x = int(e % pc.ww) + int(pc.pw);
  float sum = 0.0;
  for (uint ky = 0u; ky < pc.kh; ++ky) {
    const int yy = y - int(ky * pc.dh);
    if (yy < 0 || yy % int(pc.sh) != 0 || yy / int(pc.sh) >= int(pc.hn)) continue;
    const uint yn = uint(yy) / pc.sh;
    for (uint kx = 0u; kx < pc.kw; ++kx) {
      const int xx = x - int(kx * pc.dw);
      if (xx < 0 || xx % int(pc.sw) != 0 || xx / int(pc.sw) >= int(pc.wn)) continue;
      const uint row = (c * pc.kh + ky) * pc.kw + kx;
      sum += uintBitsToFloat(src[pc.aux0 + row * q + b * p_count + yn * pc.wn + uint(xx) / pc.sw]);
    }
  }
  return sum + bias_of(c);
}

void main() {
  const uint w = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, e = 2u * w;
  if (e >= pc.aux2) return;
  const uint lo = oa_narrow(element(e), DTYPE);
  const uint hi = e + 1u < pc.aux2 ? oa_narrow(element(e + 1u), DTYPE) : 0u;
  dst[pc.aux1 + w] = lo | (hi << 16);
}
