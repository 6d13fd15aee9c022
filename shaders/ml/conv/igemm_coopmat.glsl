// The 16-bit convolution forward on the tensor cores (src/ml/conv.cpp,
// lower_conv_half_implicit): narrow [N, CN, HN, WN] from wide
// [N, CW, HW, WW] through the weight [CN, CW, KH, KW] (groups 1, geometry as
// ml/conv/geometry.glsl), per image b (batch item OA_GROUP_ID.z) the GEMM of
// matrix/gemm_coopmat.glsl
//   C_b [CN, P] = W [CN, K] x cols_b [K, P] + bias[m] (per output channel),
// K = CW * KH * KW (k = (c * KH + ky) * KW + kx, the weight's own layout),
// P = HN * WN; C_b is image b of the narrow tensor (NCHW), rounded once.
// cols_b (the im2col of wide image b) is never stored: each 8-half copy of
// B's tile, cols_b[k, n .. n + 7], is gathered from the wide image
// (OA_GEMM_GATHER_B), zeros for taps outside it and past K and P. Push
// constants: ml/conv/igemm_coopmat.push.h; the host passes TRANS_A, TRANS_B
// and VEC_B false, C_DT and BIAS_DT the dtype's code, one K split.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef OA_CONV_IGEMM_COOPMAT_GLSL
#define OA_CONV_IGEMM_COOPMAT_GLSL
#include "common/oa.glsl"
#include "ml/conv/igemm_coopmat.push.h"

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

// cols_b[k, n .. n + 7] of the current image (bbase): k = (c, ky, kx) is
// decomposed once, the 8 narrow positions (yo, xo) walked along x with row
// wrap, each reading wide (c, yo * sh - ph + ky * dh, xo * sw - pw + kx * dw).
// Where the 8 lie in one narrow row at stride 1 and their taps in one wide
// row, they are 8 adjacent elements.
uvec4 conv_gather_b(uint k, uint n) {
  if (k >= kend || n >= pc.N) return uvec4(0u);
  const uint kh = pc.kernel_hw & 0xffffu, kw = pc.kernel_hw >> 16, taps = kh * kw;
  const uint c = k / taps, t = k - c * taps, ky = t / kw, kx = t - ky * kw;
  const uint sh = pc.stride_hw & 0xffffu, sw = pc.stride_hw >> 16;
  const int y0 = int(ky * (pc.dilation_hw & 0xffffu)) - int(pc.padding_hw & 0xffffu);
  const int x0 = int(kx * (pc.dilation_hw >> 16)) - int(pc.padding_hw >> 16);
  const uint plane = bbase + c * pc.hw * pc.ww;
  uint yo = n / pc.wn, xo = n - yo * pc.wn;
  if (sw == 1u && xo + 8u <= pc.wn) {
    const int y = int(yo * sh) + y0, x = int(xo) + x0;
    if (y < 0 || y >= int(pc.hw)) return uvec4(0u);
    if (x >= 0 && x + 8 <= int(pc.ww)) return b_run8(plane + uint(y) * pc.ww + uint(x));
  }
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    const int y = int(yo * sh) + y0, x = int(xo * sw) + x0;
    const bool tap = n + j < pc.N && y >= 0 && y < int(pc.hw) && x >= 0 && x < int(pc.ww);
    h[j] = tap ? half_b(plane + uint(y) * pc.ww + uint(x)) : 0u;
    if (++xo == pc.wn) {
      xo = 0u;
      ++yo;
    }
  }
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

#endif
