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
// no two invocations share a word: one uvec4 store where they start on a
// 16-byte boundary. Where the run's 8 source elements are consecutive in src
// (they lie in one row of an image or of the columns, and, for im2col and
// col2im, the stride along x is 1) they are read with the widest aligned
// loads (uvec4, uvec2 or words for 16-bit src, vec4 or words for f32 src), so
// that the lanes of a subgroup read consecutive memory. Otherwise the
// invocation decomposes its first element's index once and walks the other
// seven along the layout (carrying into the next row, channel or image), so
// that the integer divisions by the geometry are per invocation, not per
// element. The run's results are named vectors, filled by unrolled loops
// (put) or by shifting (push), so that no array is indexed at run time (an
// indexed array may live in slow local memory). 16-bit elements move as bits
// (im2col, gather); f32 sums are rounded once. aux0 and aux1 are the word
// offsets of src and dst in their bindings, aux2 the element count of dst;
// past it a word's high half is 0 and no word is written.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint DTYPE = 1;  // 1 f16, 2 bf16
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 0) readonly buffer Src2 { uvec2 src2[]; };
layout(std430, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) readonly buffer Bias { uint bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 2) writeonly buffer Dst4 { uvec4 dst4[]; };
#include "ml/conv/geometry.push.h"

const uint RUN = 8u;  // elements per invocation

// The bits of 16-bit src element e.
uint half_bits(uint e) { return (src[pc.aux0 + (e >> 1)] >> ((e & 1u) * 16u)) & 0xffffu; }

// 16-bit src elements e .. e + 7 as four words, two elements each (the lower
// in the low half): one uvec4 where they start on a 16-byte boundary of the
// binding, two uvec2 on an 8-byte one, else four words, or five shifted by a
// half where e is odd.
uvec4 half_run(uint e) {
  const uint a = 2u * pc.aux0 + e, w = a >> 1;
  if ((a & 7u) == 0u) return src4[w >> 2];
  if ((a & 3u) == 0u) return uvec4(src2[w >> 1], src2[(w >> 1) + 1u]);
  const uvec4 lo = uvec4(src[w], src[w + 1u], src[w + 2u], src[w + 3u]);
  if ((a & 1u) == 0u) return lo;
  return (lo >> 16) | (uvec4(lo.yzw, src[w + 4u]) << 16);
}

// Element e of an f32 src.
float f32_src(uint e) { return uintBitsToFloat(src[pc.aux0 + e]); }

// f32 src elements e .. e + 3: one uvec4 where they start on a 16-byte
// boundary of the binding, else four words.
vec4 f32_quad(uint e) {
  const uint w = pc.aux0 + e;
  if ((w & 3u) == 0u) return uintBitsToFloat(src4[w >> 2]);
  return uintBitsToFloat(uvec4(src[w], src[w + 1u], src[w + 2u], src[w + 3u]));
}

float bias_of(uint c) { return pc.has_bias != 0u ? oa_half_at(bias[c >> 1], c, DTYPE) : 0.0; }

// Element j of the run as the 16-bit bits h, in its half of word j / 2 (j a
// constant of an unrolled loop).
void put(inout uvec4 words, uint j, uint h) { words[j >> 1] |= h << ((j & 1u) * 16u); }

// MODE 0: cols[row, col] from element e on, row = (c, ky, kx), col =
// (b, yo, xo); the tap's offsets are recomputed where a run enters a row.
uvec4 im2col(uint e, uint count) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count, taps = pc.kh * pc.kw;
  uint row = e / q, col = e - row * q;
  uint b = col / p_count, p = col - b * p_count;
  uint yo = p / pc.wn, xo = p - yo * pc.wn;
  uint c = row / taps;
  const uint t = row - c * taps, ky = t / pc.kw, kx = t - ky * pc.kw;
  int y0 = int(ky * pc.dh) - int(pc.ph), x0 = int(kx * pc.dw) - int(pc.pw);
  {  // stride 1 along x: the run, inside one output row, reads one input row's consecutive elements
    const int y = int(yo * pc.sh) + y0, x = int(xo) + x0;
    if (count == RUN && pc.sw == 1u && xo + RUN <= pc.wn && y >= 0 && y < int(pc.hw) && x >= 0 && x + int(RUN) <= int(pc.ww))
      return half_run(((b * pc.cw + c) * pc.hw + uint(y)) * pc.ww + uint(x));
  }
  uvec4 words = uvec4(0u);
  [[unroll]] for (uint j = 0u; j < RUN; ++j) {
    if (j < count) {
      if (j > 0u && col == 0u) {
        c = row / taps;
        const uint t = row - c * taps, ky = t / pc.kw, kx = t - ky * pc.kw;
        y0 = int(ky * pc.dh) - int(pc.ph);
        x0 = int(kx * pc.dw) - int(pc.pw);
      }
      const int y = int(yo * pc.sh) + y0, x = int(xo * pc.sw) + x0;
      if (y >= 0 && x >= 0 && y < int(pc.hw) && x < int(pc.ww)) put(words, j, half_bits(((b * pc.cw + c) * pc.hw + uint(y)) * pc.ww + uint(x)));
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
  return words;
}

// MODE 1: rows[c, col] from element e on, col = (b, p).
uvec4 gather(uint e, uint count) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count;
  uint c = e / q, col = e - c * q;
  uint b = col / p_count, p = col - b * p_count;
  if (count == RUN && p + RUN <= p_count) return half_run((b * pc.cn + c) * p_count + p);  // inside one channel of one image
  uvec4 words = uvec4(0u);
  [[unroll]] for (uint j = 0u; j < RUN; ++j) {
    if (j < count) {
      put(words, j, half_bits((b * pc.cn + c) * p_count + p));
      if (++p == p_count) {
        p = 0u;
        if (++b == pc.n) {
          b = 0u;
          ++c;
        }
      }
    }
  }
  return words;
}

// Appends v to the run's values (lo, hi), shifting the earlier ones down:
// after 8 calls element j is component j, and no vector is indexed at run
// time, whether or not the loop that calls it is unrolled (glslc leaves the
// walks of narrow and col2im rolled: they hold the bias's widening and the
// tap loops).
void push(inout vec4 lo, inout vec4 hi, float v) {
  lo = vec4(lo.yzw, hi.x);
  hi = vec4(hi.yzw, v);
}

// The run's words: its 8 f32 values (lo, hi) rounded once.
uvec4 rounded(vec4 lo, vec4 hi) { return uvec4(oa_pack_quad(lo, DTYPE), oa_pack_quad(hi, DTYPE)); }

// MODE 2: narrow (b, c, p) from element e on.
uvec4 narrow(uint e, uint count) {
  const uint p_count = pc.hn * pc.wn, q = pc.n * p_count, image = pc.cn * p_count;
  uint b = e / image, r = e - b * image;
  uint c = r / p_count, p = r - c * p_count;
  vec4 lo = vec4(0.0), hi = vec4(0.0);
  if (count == RUN && p + RUN <= p_count) {  // inside one row of the f32 rows
    const uint s = c * q + b * p_count + p;
    const vec4 bv = vec4(bias_of(c));
    lo = f32_quad(s) + bv;
    hi = f32_quad(s + 4u) + bv;
  } else {
    [[unroll]] for (uint j = 0u; j < RUN; ++j) {
      float v = 0.0;
      if (j < count) v = f32_src(c * q + b * p_count + p) + bias_of(c);
      push(lo, hi, v);
      if (++p == p_count) {
        p = 0u;
        if (++c == pc.cn) {
          c = 0u;
          ++b;
        }
      }
    }
  }
  return rounded(lo, hi);
}

// MODE 3: wide (b, c, y, x) from element e on: the sum over taps (ky, kx)
// ascending of cols[(c, ky, kx), (b, yn, xn)] where y + ph - ky * dh =
// yn * sh and x + pw - kx * dw = xn * sw with 0 <= yn < hn, 0 <= xn < wn.
// y + ph is carried as quotient and remainder by sh (x + pw alike by sw)
// along the walk, and each tap step subtracts dh's, so no tap divides.

// (qv, rv), a quotient and remainder by s, less (dq, dr), another's.
void step_down(inout int qv, inout int rv, int dq, int dr, int s) {
  qv -= dq;
  rv -= dr;
  if (rv < 0) {
    rv += s;
    --qv;
  }
}

// cols element s + xn, 0 outside 0 <= xn < wn.
float col_at(uint s, int xn) {
  float v = 0.0;
  if (xn >= 0 && xn < int(pc.wn)) v = f32_src(s + uint(xn));
  return v;
}

uvec4 col2im(uint e, uint count) {
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
  vec4 lo = vec4(0.0), hi = vec4(0.0);
  if (count == RUN && sw == 1 && x + RUN <= pc.ww) {
    // Stride 1 along x, the run inside one row: each tap adds 8 consecutive
    // cols elements, xn = xq - kx * dw + j for element j (0 outside the narrow row).
    int qy = yq, ry = yr;
    for (uint ky = 0u; ky < pc.kh; ++ky) {
      if (ky > 0u) step_down(qy, ry, dqy, dry, sh);
      if (qy < 0) break;  // y + ph - ky * dh < 0 from here on
      if (ry != 0 || qy >= int(pc.hn)) continue;
      const uint base = ((c * pc.kh + ky) * pc.kw) * q + b * p_count + uint(qy) * pc.wn;
      for (uint kx = 0u; kx < pc.kw; ++kx) {
        const int xn = xq - int(kx * pc.dw);
        if (xn + int(RUN) <= 0) break;
        if (xn >= int(pc.wn)) continue;
        const uint s = base + kx * q;
        if (xn >= 0 && xn + int(RUN) <= int(pc.wn)) {
          lo += f32_quad(s + uint(xn));
          hi += f32_quad(s + uint(xn) + 4u);
        } else {
          lo += vec4(col_at(s, xn), col_at(s, xn + 1), col_at(s, xn + 2), col_at(s, xn + 3));
          hi += vec4(col_at(s, xn + 4), col_at(s, xn + 5), col_at(s, xn + 6), col_at(s, xn + 7));
        }
      }
    }
    const vec4 bv = vec4(bias_of(c));
    lo += bv;
    hi += bv;
  } else {
    [[unroll]] for (uint j = 0u; j < RUN; ++j) {
      float sum = 0.0;
      int qy = yq, ry = yr;
      for (uint ky = 0u; j < count && ky < pc.kh; ++ky) {
        if (ky > 0u) step_down(qy, ry, dqy, dry, sh);
        if (qy < 0) break;
        if (ry != 0 || qy >= int(pc.hn)) continue;
        const uint base = ((c * pc.kh + ky) * pc.kw) * q + b * p_count + uint(qy) * pc.wn;
        int qx = xq, rx = xr;
        for (uint kx = 0u; kx < pc.kw; ++kx) {
          if (kx > 0u) step_down(qx, rx, dqx, drx, sw);
          if (qx < 0) break;
          if (rx != 0 || qx >= int(pc.wn)) continue;
          sum += f32_src(base + kx * q + uint(qx));
        }
      }
      push(lo, hi, j < count ? sum + bias_of(c) : 0.0);
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
  return rounded(lo, hi);
}

void main() {
  const uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, e = RUN * i;
  if (e >= pc.aux2) return;
  const uint count = min(RUN, pc.aux2 - e);
  uvec4 words;
  if (MODE == 0u) words = im2col(e, count);
  else if (MODE == 1u) words = gather(e, count);
  else if (MODE == 2u) words = narrow(e, count);
  else words = col2im(e, count);
  // Words 4i .. 4i + 3 that hold an element; a lone last element's high half is 0.
  const uint w = pc.aux1 + RUN / 2u * i;
  if (count == RUN && (w & 3u) == 0u) {
    dst4[w >> 2] = words;
  } else {
    [[unroll]] for (uint k = 0u; k < RUN / 2u; ++k)
      if (2u * k < count) dst[w + k] = 2u * k + 1u < count ? words[k] : words[k] & 0xffffu;
  }
}
