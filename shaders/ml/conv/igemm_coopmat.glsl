// The 16-bit convolutions on the tensor cores (src/ml/conv.cpp,
// lower_conv_half_implicit): per image b (batch item OA_GROUP_ID.z) one GEMM
// of matrix/gemm_coopmat.glsl whose B operand is gathered on the fly from
// image b of the input, never stored (OA_GEMM_GATHER_B), C_b written into
// image b of the output (NCHW) with bias[m] per output channel, rounded
// once. Geometry as ml/conv/geometry.glsl (groups 1).
//   Forward (MODE 0): narrow [N, CN, HN, WN] from wide
//     [N, CW, HW, WW]: C_b [CN, HN * WN] = W [CN, K] x cols_b [K, HN * WN],
//     K = CW * KH * KW (k = (c * KH + ky) * KW + kx, the weight's own
//     layout); cols_b[k, (yo, xo)] = wide (c, yo * sh - ph + ky * dh,
//     xo * sw - pw + kx * dw), 0 outside the image.
//   Transposed gather (MODE 1): wide from narrow (a transposed
//     convolution's forward, a convolution's input gradient):
//     C_b [CW, HW * WW] = Wt [CW, K] x rows_b [K, HW * WW], K = CN * KH * KW
//     (Wt the weight permuted to [CW, CN, KH, KW] by the host);
//     rows_b[(c, ky, kx), (y, x)] = narrow (c, (y + ph - ky * dh) / sh,
//     (x + pw - kx * dw) / sw) where both divide exactly and land inside the
//     image, else 0. At stride s > 1 only one tap in s along each axis
//     divides: the others are multiplied as zeros (the GEMM stays dense).
// Each 8-half copy of B's tile, B_b[k, n .. n + 7], is gathered at once,
// zeros past K and N.
// Channels last (TRANS_B true): the gathered image is stored [H, W, C]
// (C, its channels, a multiple of 8; b_off and b_stride multiples of 8) and
// k runs (ky, kx, c), c fastest (the host permutes the weight to match), so
// a copy op(B_b)[k .. k + 7, n] is 8 adjacent channels of one input pixel:
// one uvec4 load, or zeros where the tap falls outside the image. The
// transposed gather is then taken at stride 1 only.
//   Weight gradient (MODE 2; channels last, TRANS_B false): dWt [CN, T * CW]
//     = dY' [CN, N * P] x cols [N * P, T * CW] over the whole batch (dY' the
//     output gradient permuted to [CN, N, P]; dWt's columns (tap, channel),
//     channel fastest), cols[(b, p), (tap, c .. c + 7)] the 8 channels of
//     the input pixel tap (ky, kx) of output position p of image b reads;
//     K may be split (f32 partial products).
// Push constants: ml/conv/igemm_coopmat.push.h; the host passes TRANS_A and
// VEC_B false, the forward and transposed C_DT and BIAS_DT the dtype's code
// and one K split.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef OA_CONV_IGEMM_COOPMAT_GLSL
#define OA_CONV_IGEMM_COOPMAT_GLSL
#include "common/oa.glsl"
#include "ml/conv/igemm_coopmat.push.h"

// 0: forward, 1: transposed gather, 2: weight gradient (see the top).
layout(constant_id = 15) const uint MODE = 0;
const bool TRANSPOSED = MODE == 1u, WGRAD = MODE == 2u;

#define OA_GEMM_OWN_PUSH
#define OA_GEMM_ROW_BIAS
#define OA_GEMM_GATHER_B(k, n) conv_gather_b(k, n)
uvec4 conv_gather_b(uint k, uint n);
#include "matrix/gemm_coopmat.glsl"

// Elements e .. e + 7 of B (any e; all inside the binding).
uvec4 b_run8(uint e) {
  if ((e & 7u) == 0u) return b4[e >> 3];
  const uint w = e >> 1;
  const uvec4 q = uvec4(b1[w], b1[w + 1u], b1[w + 2u], b1[w + 3u]);
  if ((e & 1u) == 0u) return q;
  const uint last = b1[w + 4u];
  return uvec4((q.x >> 16) | (q.y << 16), (q.y >> 16) | (q.z << 16), (q.z >> 16) | (q.w << 16), (q.w >> 16) | (last << 16));
}

// n / d for n < 2^22, given inv = 1.0 / float(d): the float quotient, off by
// at most one there, corrected.
uint quotient(uint n, uint d, float inv) {
  uint q = uint(float(n) * inv);
  const int rest = int(n) - int(q * d);
  if (rest < 0) --q;
  else if (rest >= int(d)) ++q;
  return q;
}

// op(B_b)[k .. k + 7, n] of the current image stored channels last (see the
// top): k = (ky * KW + kx) * C + c with C = K / taps.
uvec4 conv_gather_channels_last(uint k, uint n) {
  if (k >= kend || n >= pc.N) return uvec4(0u);
  const uint kh = pc.kernel_hw & 0xffffu, kw = pc.kernel_hw >> 16, channels = pc.K / (kh * kw);
  const uint tap = quotient(k, channels, 1.0 / float(channels)), c = k - tap * channels;
  const uint ky = quotient(tap, kw, 1.0 / float(kw)), kx = tap - ky * kw;
  const uint yo = quotient(n, pc.out_w, 1.0 / float(pc.out_w)), xo = n - yo * pc.out_w;
  const int ty = int(ky * (pc.dilation_hw & 0xffffu)) - int(pc.padding_hw & 0xffffu);
  const int tx = int(kx * (pc.dilation_hw >> 16)) - int(pc.padding_hw >> 16);
  // Forward: input (yo * sh + ty, xo * sw + tx); transposed (stride 1): (yo - ty, xo - tx).
  const int y = TRANSPOSED ? int(yo) - ty : int(yo * (pc.stride_hw & 0xffffu)) + ty;
  const int x = TRANSPOSED ? int(xo) - tx : int(xo * (pc.stride_hw >> 16)) + tx;
  if (y < 0 || x < 0 || y >= int(pc.in_h) || x >= int(pc.in_w)) return uvec4(0u);
  return b4[(bbase + (uint(y) * pc.in_w + uint(x)) * channels + c) >> 3];
}

// cols[k, n .. n + 7] of the weight gradient (see the top): k = b * P + p,
// n = (ky * KW + kx) * C + c, the input stored [N, H, W, C] from bbase.
uvec4 conv_gather_wgrad(uint k, uint n) {
  if (k >= kend || n >= pc.N) return uvec4(0u);
  const uint kh = pc.kernel_hw & 0xffffu, kw = pc.kernel_hw >> 16, channels = pc.N / (kh * kw);
  const uint image = quotient(k, pc.positions, 1.0 / float(pc.positions)), p = k - image * pc.positions;
  const uint yo = quotient(p, pc.out_w, 1.0 / float(pc.out_w)), xo = p - yo * pc.out_w;
  const uint tap = quotient(n, channels, 1.0 / float(channels)), c = n - tap * channels;
  const uint ky = quotient(tap, kw, 1.0 / float(kw)), kx = tap - ky * kw;
  const int y = int(yo * (pc.stride_hw & 0xffffu) + ky * (pc.dilation_hw & 0xffffu)) - int(pc.padding_hw & 0xffffu);
  const int x = int(xo * (pc.stride_hw >> 16) + kx * (pc.dilation_hw >> 16)) - int(pc.padding_hw >> 16);
  if (y < 0 || x < 0 || y >= int(pc.in_h) || x >= int(pc.in_w)) return uvec4(0u);
  return b4[(bbase + ((image * pc.in_h + uint(y)) * pc.in_w + uint(x)) * channels + c) >> 3];
}

// The copy at (k, n): the weight gradient's (WGRAD) or channels last
// (TRANS_B), the functions above; else
// B_b[k, n .. n + 7] of the current image (bbase): k = (c, ky, kx) is
// decomposed once, the 8 output positions (yo, xo) walked along x with row
// wrap, each reading input (c, yi, xi): forward yi = yo * sh + y0 with
// y0 = ky * dh - ph; transposed yi = (yo + y0) / sh with y0 = ph - ky * dh
// where it divides (x alike). Where the 8 lie in one output row at stride 1
// and their taps in one input row, they are 8 adjacent elements.
uvec4 conv_gather_b(uint k, uint n) {
  if (WGRAD) return conv_gather_wgrad(k, n);
  if (TRANS_B) return conv_gather_channels_last(k, n);
  if (k >= kend || n >= pc.N) return uvec4(0u);
  const uint kh = pc.kernel_hw & 0xffffu, kw = pc.kernel_hw >> 16, taps = kh * kw;
  const uint c = k / taps, t = k - c * taps, ky = t / kw, kx = t - ky * kw;
  const uint sh = pc.stride_hw & 0xffffu, sw = pc.stride_hw >> 16;
  const int ty = int(ky * (pc.dilation_hw & 0xffffu)), tx = int(kx * (pc.dilation_hw >> 16));
  const int py = int(pc.padding_hw & 0xffffu), px = int(pc.padding_hw >> 16);
  const int y0 = TRANSPOSED ? py - ty : ty - py, x0 = TRANSPOSED ? px - tx : tx - px;
  const uint plane = bbase + c * pc.in_h * pc.in_w;
  uint yo = n / pc.out_w, xo = n - yo * pc.out_w;
  // Stride 1 along x: forward and transposed read input x = xo + x0 (sh is 1 too when transposed).
  if (sw == 1u && (!TRANSPOSED || sh == 1u) && xo + 8u <= pc.out_w) {
    const int y = int(TRANSPOSED ? yo : yo * sh) + y0, x = int(xo) + x0;
    if (y < 0 || y >= int(pc.in_h)) return uvec4(0u);
    if (x >= 0 && x + 8 <= int(pc.in_w)) return b_run8(plane + uint(y) * pc.in_w + uint(x));
  }
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    int y, x;
    bool tap = n + j < pc.N;
    if (TRANSPOSED) {
      const int yy = int(yo) + y0, xx = int(xo) + x0;
      tap = tap && yy >= 0 && xx >= 0 && uint(yy) % sh == 0u && uint(xx) % sw == 0u;
      y = yy / int(sh);
      x = xx / int(sw);
    } else {
      y = int(yo * sh) + y0;
      x = int(xo * sw) + x0;
    }
    tap = tap && y >= 0 && y < int(pc.in_h) && x >= 0 && x < int(pc.in_w);
    h[j] = tap ? half_b(plane + uint(y) * pc.in_w + uint(x)) : 0u;
    if (++xo == pc.out_w) {
      xo = 0u;
      ++yo;
    }
  }
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

#endif
