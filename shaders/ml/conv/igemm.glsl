#ifndef OA_CONV_IGEMM_GLSL
#define OA_CONV_IGEMM_GLSL
// Implicit-GEMM convolution (see geometry.glsl for the narrow/wide relation).
//
// WIDE == 0 (convolution): dst = narrow [N, CN, HN, WN], src = wide. Per group g
//   the GEMM is dst[m = (n, yn, xn), o] = sum_{k = (c, kh, kw)} A[m, k] * W[g*CNg + o, c, kh, kw]
//   with A gathered from src on the fly (zero outside the input).
// WIDE == 1 (transposed convolution): dst = wide [N, CW, HW, WW], src = narrow.
//   Workgroup z enumerates (group, output phase (yw mod sh, xw mod sw)); within a
//   phase only the taps with a matching residue contribute, so each phase is a
//   dense GEMM over k = (o, t_h, t_w) without wasted zero taps and without atomics.
//
// Each workgroup computes a BM x BN tile (output positions x output channels);
// the k loop stages BK-deep slices of A and B in shared memory, and each
// invocation accumulates TM x TN outputs in registers. A tile of at most 4
// channels (BN <= 4: few output channels, such as an RGB image or the input
// gradient of a one-channel signal) has no A values to share between
// invocations: each invocation gathers its own TM positions (NT apart) from
// src over the whole K and reads the weights of its channels from shared
// memory, KB k rows at a time.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/forward_io.glsl"

// The tile shape is fixed at compile time by the including variant file
// (igemm_<BM>x<BN>.comp defines OA_BM, OA_BN, OA_TM, OA_TN) so that the
// register tiles unroll into registers.
const uint BM = OA_BM, BN = OA_BN, TM = OA_TM, TN = OA_TN;
layout(constant_id = 0) const uint WIDE = 0;
layout(local_size_x = (OA_BM / OA_TM) * (OA_BN / OA_TN)) in;
const uint BK = 16;
const uint BNP = BN + 4;  // padded row of the B tile (keeps 16-byte alignment)

#if OA_BN > 4
// Both tiles k-major (a row of BM or BNP floats per k), read by quads.
shared vec4 As[BK * BM / 4u];
shared vec4 Bs[BK * BNP / 4u];
#else
const uint KB = 256u;
shared vec4 Ws[KB];
#endif

// Position m of an mh x mw grid per image as (image, row, column).
uvec3 oa_position(uint m, uint mhw, uint mw) {
  const uint n = m / mhw;
  const uint r = m - n * mhw;
  const uint jy = r / mw;
  return uvec3(n, jy, r - jy * mw);
}

void main() {
  const uint NT = (BM / TM) * (BN / TN);
  const uint tid = gl_LocalInvocationID.x;
  const uvec3 wg = OA_GROUP_ID;
  const uint khw = pc.kh * pc.kw;
  const uint cng = pc.cn / pc.groups, cwg = pc.cw / pc.groups;

  // Geometry of this workgroup's GEMM.
  uint g, cols, kc, kth, ktw, mh, mw, out_c, out_h, out_w, src_h, src_w, src_cs;
  uint py = 0u, px = 0u, osy = 1u, osx = 1u;
  int isy, isx, by, bx, tapy, tapx;
  uint wbase, wcol, wc, wth, wtw;
  if (WIDE == 0u) {
    g = wg.z;
    cols = cng;
    kc = cwg;
    kth = pc.kh;
    ktw = pc.kw;
    mh = pc.hn;
    mw = pc.wn;
    out_c = pc.cn; out_h = pc.hn; out_w = pc.wn;
    src_h = pc.hw; src_w = pc.ww; src_cs = pc.cw;
    isy = int(pc.sh); isx = int(pc.sw);
    by = -int(pc.ph); bx = -int(pc.pw);
    tapy = int(pc.dh); tapx = int(pc.dw);
    wbase = g * cng * cwg * khw;
    wcol = cwg * khw;
    wc = khw;
    wth = pc.kw;
    wtw = 1u;
  } else {
    // Phases at or past the output extent hold no positions: min(stride, extent) per axis.
    const uint phx = min(pc.sw, pc.ww);
    const uint phases = min(pc.sh, pc.hw) * phx;
    g = wg.z / phases;
    const uint phase = wg.z - g * phases;
    py = phase / phx;
    px = phase - py * phx;
    OaPhaseTaps ty = oa_phase_taps(py, pc.sh, pc.ph, pc.kh, pc.dh);
    OaPhaseTaps tx = oa_phase_taps(px, pc.sw, pc.pw, pc.kw, pc.dw);
    cols = cwg;
    kc = cng;
    kth = ty.count;
    ktw = tx.count;
    mh = py < pc.hw ? (pc.hw - 1u - py) / pc.sh + 1u : 0u;
    mw = px < pc.ww ? (pc.ww - 1u - px) / pc.sw + 1u : 0u;
    out_c = pc.cw; out_h = pc.hw; out_w = pc.ww;
    src_h = pc.hn; src_w = pc.wn; src_cs = pc.cn;
    osy = pc.sh; osx = pc.sw;
    isy = 1; isx = 1;
    by = ty.base; bx = tx.base;
    tapy = -ty.tap; tapx = -tx.tap;
    wbase = g * cng * cwg * khw + ty.k0 * pc.kw + tx.k0;
    wcol = khw;
    wc = cwg * khw;
    wth = ty.step * pc.kw;
    wtw = tx.step;
  }
  const uint mhw = mh * mw;
  const uint M = pc.n * mhw;
  const uint m0 = wg.x * BM;
  if (m0 >= M) return;  // uniform: this phase has fewer positions than the grid covers
  const uint col0 = wg.y * BN;
  const uint kt = kth * ktw;
  const uint K = kc * kt;
  const uint src_hw = src_h * src_w;
  const uint out_hw = out_h * out_w;

#if OA_BN <= 4
  uint a_base[TM];
  int iy0[TM], ix0[TM];
  vec4 acc[TM];
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint m = m0 + tid + i * NT;
    const uvec3 q = oa_position(min(m, M - 1u), mhw, mw);
    a_base[i] = (q.x * src_cs + g * kc) * src_hw;
    // A position past M gathers from outside the source: zero.
    iy0[i] = m < M ? int(q.y) * isy + by : -(1 << 30);
    ix0[i] = int(q.z) * isx + bx;
    acc[i] = vec4(0.0);
  }
  for (uint kb = 0u; kb < K; kb += KB) {
    barrier();  // the previous rows' reads of Ws are done
    for (uint r = tid; r < KB; r += NT) {
      const uint k = kb + r;
      const uint c = k / max(kt, 1u), rem = k - c * kt, th = rem / max(ktw, 1u), tw = rem - th * ktw;
      const uint woff = wbase + c * wc + th * wth + tw * wtw;
      vec4 w = vec4(0.0);
      [[unroll]] for (uint j = 0u; j < BN; ++j)
        if (k < K && col0 + j < cols) w[j] = wt[woff + (col0 + j) * wcol];
      Ws[r] = w;
    }
    barrier();
    uint c = kb / max(kt, 1u), rem = kb - c * kt, th = rem / max(ktw, 1u), tw = rem - th * ktw;
    for (uint r = 0u; r < min(KB, K - kb); ++r) {
      const vec4 w = Ws[r];
      const int dy = int(th) * tapy, dx = int(tw) * tapx;
      const uint coff = c * src_hw;
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        const int iy = iy0[i] + dy, ix = ix0[i] + dx;
        if (iy >= 0 && iy < int(src_h) && ix >= 0 && ix < int(src_w)) acc[i] += src[a_base[i] + coff + uint(iy) * src_w + uint(ix)] * w;
      }
      if (++tw == ktw) {
        tw = 0u;
        if (++th == kth) {
          th = 0u;
          ++c;
        }
      }
    }
  }
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint m = m0 + tid + i * NT;
    if (m < M) {
      const uvec3 q = oa_position(m, mhw, mw);
      const uint base = q.x * out_c * out_hw + (py + q.y * osy) * out_w + px + q.z * osx;
      [[unroll]] for (uint j = 0u; j < BN; ++j) {
        const uint col = col0 + j;
        if (col < cols) {
          const uint ch = g * cols + col;
          dst[base + ch * out_hw] = acc[i][j] + (pc.has_bias != 0u ? bias[ch] : 0.0);
        }
      }
    }
  }
#else
  // A loader: fixed row am, AK consecutive k starting at ak0.
  const uint AK = BK * BM / NT;
  const uint am = tid % BM;
  const uint ak0 = (tid / BM) * AK;
  const uint m = m0 + am;
  const bool m_ok = m < M;
  uint a_base = 0u;
  int iy0 = 0, ix0 = 0;
  if (m_ok) {
    const uvec3 q = oa_position(m, mhw, mw);
    a_base = (q.x * src_cs + g * kc) * src_hw;
    iy0 = int(q.y) * isy + by;
    ix0 = int(q.z) * isx + bx;
  }
  // B loader: fixed k row bk, columns bn0 + j * (NT / BK).
  const uint bk = tid % BK;
  const uint bn0 = tid / BK;

  // Compute layout: the tile is cut into WM x WN blocks (positions x
  // channels), each covered by 32 consecutive invocations (one NVIDIA
  // subgroup: a compact block whose shared-memory reads touch few distinct
  // quads), positions varying fastest. Within its block an invocation owns
  // the 4x4 pieces at rows r0 + p * RM + 0..3 and columns c0 + q * RN + 0..3.
  const uint WM = min(BM, 8u * TM), WN = 32u * TM * TN / WM;
  const uint RM = WM / (TM / 4u), RN = WN / (TN / 4u);
  const uint block = tid / 32u, lane = tid % 32u;
  const uint r0 = (block % (BM / WM)) * WM + (lane % (WM / TM)) * 4u;
  const uint c0 = (block / (BM / WM)) * WN + (lane / (WM / TM)) * 4u;
  float acc[TM * TN];
  [[unroll]] for (uint i = 0u; i < TM * TN; ++i) acc[i] = 0.0;

  // Global loads of slice k0 + BK are issued into registers before the
  // arithmetic on slice k0 (register prefetch), then stored to shared memory.
  const uint BJ = BN * BK / NT;
  float ra[AK];
  float rb[BJ];
  for (uint k0 = 0u; k0 < K + BK; k0 += BK) {
    if (k0 < K) {
      uint k = k0 + ak0;
      uint c = k / max(kt, 1u);
      uint rem = k - c * kt;
      uint th = rem / max(ktw, 1u);
      uint tw = rem - th * ktw;
      [[unroll]] for (uint j = 0u; j < AK; ++j) {
        float v = 0.0;
        if (m_ok && k < K) {
          const int iy = iy0 + int(th) * tapy;
          const int ix = ix0 + int(tw) * tapx;
          if (iy >= 0 && iy < int(src_h) && ix >= 0 && ix < int(src_w))
            v = src[a_base + c * src_hw + uint(iy) * src_w + uint(ix)];
        }
        ra[j] = v;
        ++k;
        if (++tw == ktw) {
          tw = 0u;
          if (++th == kth) {
            th = 0u;
            ++c;
          }
        }
      }
      const uint kb = k0 + bk;
      const uint cb = kb / max(kt, 1u);
      const uint remb = kb - cb * kt;
      const uint thb = remb / max(ktw, 1u);
      const uint twb = remb - thb * ktw;
      const uint woff = wbase + cb * wc + thb * wth + twb * wtw;
      [[unroll]] for (uint j = 0u; j < BJ; ++j) {
        const uint col = col0 + bn0 + j * (NT / BK);
        rb[j] = (kb < K && col < cols) ? wt[woff + col * wcol] : 0.0;
      }
    }
    if (k0 > 0u) {
      [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
        vec4 a[TM / 4u], b[TN / 4u];
        [[unroll]] for (uint p = 0u; p < TM / 4u; ++p) a[p] = As[(kk * BM + r0 + p * RM) / 4u];
        [[unroll]] for (uint q = 0u; q < TN / 4u; ++q) b[q] = Bs[(kk * BNP + c0 + q * RN) / 4u];
        [[unroll]] for (uint i = 0u; i < TM; ++i)
          [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i * TN + j] = fma(a[i / 4u][i % 4u], b[j / 4u][j % 4u], acc[i * TN + j]);
      }
      barrier();
    }
    if (k0 < K) {
      [[unroll]] for (uint j = 0u; j < AK; ++j) {
        const uint f = (ak0 + j) * BM + am;
        As[f / 4u][f % 4u] = ra[j];
      }
      [[unroll]] for (uint j = 0u; j < BJ; ++j) {
        const uint f = bk * BNP + bn0 + j * (NT / BK);
        Bs[f / 4u][f % 4u] = rb[j];
      }
      barrier();
    }
  }

  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint mi = m0 + r0 + (i / 4u) * RM + i % 4u;
    if (mi < M) {
      const uvec3 q = oa_position(mi, mhw, mw);
      const uint base = q.x * out_c * out_hw + (py + q.y * osy) * out_w + px + q.z * osx;
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint col = col0 + c0 + (j / 4u) * RN + j % 4u;
        if (col < cols) {
          const uint ch = g * cols + col;
          dst[base + ch * out_hw] = acc[i * TN + j] + (pc.has_bias != 0u ? bias[ch] : 0.0);
        }
      }
    }
  }
#endif
}

#endif
