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
// 16-bit elements are two to a word (common/half_io.glsl); invocation i
// writes words 4i .. 4i + 3 of dst (elements 8i .. 8i + 7 of its window), so
// no two invocations share a word. It decomposes its first element's index
// once and walks the other seven along the layout (carrying into the next
// row, channel or image), so that the integer divisions by the geometry are
// per invocation, not per element. aux0 and aux1 are the word offsets of src
// and dst in their bindings, aux2 the element count of dst; past it a word's
// high half is 0 and no word is written.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint DTYPE = 1;  // 1 f16, 2 bf16
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) readonly buffer Bias { uint bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { uint dst[]; };
#include "ml/conv/geometry.push.h"

const uint RUN = 8u;  // elements per invocation

// Element e of a 16-bit src.
float half_src(uint e) { return oa_half_at(src[pc.aux0 + (e >> 1)], e, DTYPE); }

// Element e of an f32 src.
float f32_src(uint e) { return uintBitsToFloat(src[pc.aux0 + e]); }

float bias_of(uint c) { return pc.has_bias != 0u ? oa_half_at(bias[c >> 1], c, DTYPE) : 0.0; }

// MODE 0: cols[row, col] from element e on, row = (c, ky, kx), col =
// (b, yo, xo); the tap's offsets are recomputed where a run enters a row.
void im2col(uint e, uint count, inout float v[RUN]) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count, taps = pc.kh * pc.kw;
  uint row = e / q, col = e - row * q;
  uint b = col / p_count, p = col - b * p_count;
  uint yo = p / pc.wn, xo = p - yo * pc.wn;
  uint c = 0u;
  int y0 = 0, x0 = 0;
  for (uint j = 0u; j < count; ++j) {
    if (j == 0u || col == 0u) {
      c = row / taps;
      const uint t = row - c * taps, ky = t / pc.kw, kx = t - ky * pc.kw;
      y0 = int(ky * pc.dh) - int(pc.ph);
      x0 = int(kx * pc.dw) - int(pc.pw);
    }
    const int y = int(yo * pc.sh) + y0, x = int(xo * pc.sw) + x0;
    const bool inside = y >= 0 && x >= 0 && y < int(pc.hw) && x < int(pc.ww);
    v[j] = inside ? half_src(((b * pc.cw + c) * pc.hw + uint(y)) * pc.ww + uint(x)) : 0.0;
    if (++xo == pc.wn) {
      xo = 0u;
      if (++yo == pc.hn) {
        yo = 0u;
        ++b;
      }
    }
    if (++col == q) {
      col = 0u;
      b = 0u;
      ++row;
    }
  }
}

// MODE 1: rows[c, col] from element e on, col = (b, p).
void gather(uint e, uint count, inout float v[RUN]) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count;
  uint c = e / q, col = e - c * q;
  uint b = col / p_count, p = col - b * p_count;
  for (uint j = 0u; j < count; ++j) {
    v[j] = half_src((b * pc.cn + c) * p_count + p);
    if (++p == p_count) {
      p = 0u;
      if (++b == pc.n) {
        b = 0u;
        ++c;
      }
    }
  }
}

// MODE 2: narrow (b, c, p) from element e on.
void narrow(uint e, uint count, inout float v[RUN]) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count, image = pc.cn * p_count;
  uint b = e / image, r = e - b * image;
  uint c = r / p_count, p = r - c * p_count;
  for (uint j = 0u; j < count; ++j) {
    v[j] = f32_src(c * q + b * p_count + p) + bias_of(c);
    if (++p == p_count) {
      p = 0u;
      if (++c == pc.cn) {
        c = 0u;
        ++b;
      }
    }
  }
}

// MODE 3: wide (b, c, y, x) from element e on: the sum over taps (ky, kx)
// ascending of cols[(c, ky, kx), (b, yn, xn)] where y + ph - ky * dh =
// yn * sh and x + pw - kx * dw = xn * sw with 0 <= yn < hn, 0 <= xn < wn.
// y + ph is carried as quotient and remainder by sh (x + pw alike by sw)
// along the walk, and each tap step subtracts dh's, so no tap divides.
void col2im(uint e, uint count, inout float v[RUN]) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count, plane = pc.hw * pc.ww, image = pc.cw * plane;
  const int sh = int(pc.sh), sw = int(pc.sw);
  // dh = dqy * sh + dry, dw = dqx * sw + drx; ph = pqy * sh + pry, pw = pqx * sw + prx.
  const int dqy = int(pc.dh / pc.sh), dry = int(pc.dh % pc.sh), dqx = int(pc.dw / pc.sw), drx = int(pc.dw % pc.sw);
  const int pqy = int(pc.ph / pc.sh), pry = int(pc.ph % pc.sh), pqx = int(pc.pw / pc.sw), prx = int(pc.pw % pc.sw);
  uint b = e / image, r = e - b * image;
  uint c = r / plane;
  r -= c * plane;
  uint y = r / pc.ww, x = r - y * pc.ww;
  // (y + ph) = yq * sh + yr, (x + pw) = xq * sw + xr.
  int yq = int((y + pc.ph) / pc.sh), yr = int((y + pc.ph) % pc.sh);
  int xq = int((x + pc.pw) / pc.sw), xr = int((x + pc.pw) % pc.sw);
  for (uint j = 0u; j < count; ++j) {
    float sum = 0.0;
    int qy = yq, ry = yr;
    for (uint ky = 0u; ky < pc.kh; ++ky) {
      if (ky > 0u) {  // subtract dh
        qy -= dqy;
        ry -= dry;
        if (ry < 0) {
          ry += sh;
          --qy;
        }
      }
      if (qy < 0) break;  // y + ph - ky * dh < 0 from here on
      if (ry != 0 || qy >= int(pc.hn)) continue;
      const uint base = ((c * pc.kh + ky) * pc.kw) * q + b * p_count + uint(qy) * pc.wn;
      int qx = xq, rx = xr;
      for (uint kx = 0u; kx < pc.kw; ++kx) {
        if (kx > 0u) {
          qx -= dqx;
          rx -= drx;
          if (rx < 0) {
            rx += sw;
            --qx;
          }
        }
        if (qx < 0) break;
        if (rx != 0 || qx >= int(pc.wn)) continue;
        sum += f32_src(base + kx * q + uint(qx));
      }
    }
    v[j] = sum + bias_of(c);
    // The next element: x + 1, carrying into y, c and b.
    if (++x == pc.ww) {
      x = 0u;
      xq = pqx;
      xr = prx;
      if (++y == pc.hw) {
        y = 0u;
        yq = pqy;
        yr = pry;
        if (++c == pc.cw) {
          c = 0u;
          ++b;
        }
      } else if (++yr == sh) {
        yr = 0;
        ++yq;
      }
    } else if (++xr == sw) {
      xr = 0;
      ++xq;
    }
  }
}

void main() {
  const uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, e = RUN * i;
  if (e >= pc.aux2) return;
  const uint count = min(RUN, pc.aux2 - e);
  float v[RUN];
  [[unroll]] for (uint j = 0u; j < RUN; ++j) v[j] = 0.0;
  if (MODE == 0u) im2col(e, count, v);
  else if (MODE == 1u) gather(e, count, v);
  else if (MODE == 2u) narrow(e, count, v);
  else col2im(e, count, v);
  // Words 4i .. 4i + 3 that hold an element; a lone last element's high half is 0.
  [[unroll]] for (uint k = 0u; k < RUN / 2u; ++k) {
    if (2u * k >= count) break;
    const uint hi = 2u * k + 1u < count ? oa_narrow(v[2u * k + 1u], DTYPE) : 0u;
    dst[pc.aux1 + RUN / 2u * i + k] = oa_narrow(v[2u * k], DTYPE) | (hi << 16);
  }
}
