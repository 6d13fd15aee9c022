#ifndef OA_CONV_WGRAD_GLSL
#define OA_CONV_WGRAD_GLSL
// Weight gradient of the convolution relation (geometry.glsl) as a GEMM over
// narrow positions m = (n, yn, xn):
//   dW[g*CNg + o, c, kh, kw] = sum_m D[n, g*CNg + o, yn, xn] * A[m, (c, kh, kw)]
// with D the narrow tensor (the convolution's output gradient, or the
// transposed convolution's input) and A gathered on the fly from the wide
// tensor. Each workgroup computes a BO x BKK tile of one group over one split
// of the m range (workgroup z = group * splits + split), staging RM positions
// at a time in shared memory; the global loads of the next RM positions go to
// registers before the arithmetic on the current ones. Each invocation holds
// TO x TK sums. Splits write separate partial results (aux2 floats apart) that
// ml/conv/reduce sums in a fixed order. Push aux0: splits; aux1: positions per
// split (a multiple of RM).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/wgrad_io.glsl"

// The tile shape is fixed by the including variant file (wgrad_<BO>x<BKK>.comp
// defines OA_BO, OA_BKK, OA_TO, OA_TK) so the register tiles unroll.
const uint BO = OA_BO, BKK = OA_BKK, TO = OA_TO, TK = OA_TK;
layout(local_size_x = (OA_BO / OA_TO) * (OA_BKK / OA_TK)) in;
const uint NT = (BO / TO) * (BKK / TK);
const uint RM = 16u;
const uint AJ = RM * BKK / NT;  // A values each invocation stages per step
const uint DJ = RM * BO / NT;   // D values likewise
// Padded shared rows: conflict-free column stores, and 16-byte aligned rows
// where invocations read quads.
const uint BOP = BO + (TO % 4u == 0u ? 4u : 1u), BKP = BKK + (TK % 4u == 0u ? 4u : 1u);

#if OA_TO % 4 == 0 && OA_TK % 4 == 0
// Register blocks of whole quads: the tile is cut into WO x WK blocks, each
// covered by 32 consecutive invocations (one NVIDIA subgroup: a compact block
// whose shared-memory reads touch few distinct quads), columns varying
// fastest. An invocation owns the 4x4 pieces at rows r0 + p * RO + 0..3 and
// columns c0 + q * RK + 0..3 of its block, read from shared memory by quads.
#define OA_WGRAD_QUADS
const uint WK = min(BKK, 8u * TK), WO = 32u * TO * TK / WK;
const uint RO = WO / (TO / 4u), RK = WK / (TK / 4u);
shared vec4 Ds[RM * BOP / 4u];
shared vec4 As[RM * BKP / 4u];
#define OA_WGRAD_SET(S, f, v) S[(f) / 4u][(f) % 4u] = v
#else
// Lane t holds every (B / T)-th column of the tile (B columns, T per lane).
shared float Ds[RM * BOP];
shared float As[RM * BKP];
#define OA_WGRAD_SET(S, f, v) S[f] = v
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uvec3 wg = OA_GROUP_ID;
  const uint splits = pc.aux0;
  const uint g = wg.z / splits;
  const uint split = wg.z - g * splits;
  const uint khw = pc.kh * pc.kw;
  const uint cng = pc.cn / pc.groups, cwg = pc.cw / pc.groups;
  const uint K = cwg * khw;
  const uint hwn = pc.hn * pc.wn, hww = pc.hw * pc.ww;
  const uint M = pc.n * hwn;
  const uint k0 = wg.x * BKK, o0 = wg.y * BO;
  const uint m_begin = split * pc.aux1;
  const uint m_end = min(M, m_begin + pc.aux1);

  // Loader: position lm of each step, columns lk + j * (NT / RM). Its gather
  // columns never change: decompose them once.
  const uint lm = tid % RM;
  const uint lk = tid / RM;
  uint k_off[AJ];
  int k_dy[AJ];
  int k_dx[AJ];
  bool k_ok[AJ];
  [[unroll]] for (uint j = 0u; j < AJ; ++j) {
    const uint k = k0 + lk + j * (NT / RM);
    k_ok[j] = k < K;
    const uint c = k / khw;
    const uint rem = k - c * khw;
    const uint kh = rem / pc.kw;
    const uint kw = rem - kh * pc.kw;
    k_off[j] = (g * cwg + c) * hww;
    k_dy[j] = int(kh * pc.dh);
    k_dx[j] = int(kw * pc.dw);
  }

#ifdef OA_WGRAD_QUADS
  const uint block = tid / 32u, lane = tid % 32u;
  const uint c0 = (block % (BKK / WK)) * WK + (lane % (WK / TK)) * 4u;
  const uint r0 = (block / (BKK / WK)) * WO + (lane / (WK / TK)) * 4u;
#define OA_WGRAD_ROW(i) (r0 + ((i) / 4u) * RO + (i) % 4u)
#define OA_WGRAD_COL(j) (c0 + ((j) / 4u) * RK + (j) % 4u)
#else
  const uint tx = tid % (BKK / TK);
  const uint ty = tid / (BKK / TK);
#define OA_WGRAD_ROW(i) (ty + (i) * (BO / TO))
#define OA_WGRAD_COL(j) (tx + (j) * (BKK / TK))
#endif
  float acc[TO * TK];
  [[unroll]] for (uint i = 0u; i < TO * TK; ++i) acc[i] = 0.0;

  float rd[DJ];
  float ra[AJ];
  for (uint mb = m_begin; mb < m_end + RM; mb += RM) {
    if (mb < m_end) {
      const uint m = mb + lm;
      const bool m_ok = m < m_end;
      uint n = 0u, p = 0u;
      int iy0 = 0, ix0 = 0;
      if (m_ok) {
        n = m / hwn;
        p = m - n * hwn;
        const uint yn = p / pc.wn;
        iy0 = int(yn * pc.sh) - int(pc.ph);
        ix0 = int((p - yn * pc.wn) * pc.sw) - int(pc.pw);
      }
      [[unroll]] for (uint j = 0u; j < DJ; ++j) {
        const uint o = o0 + lk + j * (NT / RM);
        rd[j] = (m_ok && o < cng) ? dn[(n * pc.cn + g * cng + o) * hwn + p] : 0.0;
      }
      const uint wbase = n * pc.cw * hww;
      [[unroll]] for (uint j = 0u; j < AJ; ++j) {
        const int iy = iy0 + k_dy[j];
        const int ix = ix0 + k_dx[j];
        ra[j] = (m_ok && k_ok[j] && iy >= 0 && iy < int(pc.hw) && ix >= 0 && ix < int(pc.ww))
                    ? xw[wbase + k_off[j] + uint(iy) * pc.ww + uint(ix)]
                    : 0.0;
      }
    }
    if (mb > m_begin) {
      [[unroll]] for (uint r = 0u; r < RM; ++r) {
#ifdef OA_WGRAD_QUADS
        vec4 d[TO / 4u], a[TK / 4u];
        [[unroll]] for (uint p = 0u; p < TO / 4u; ++p) d[p] = Ds[(r * BOP + r0 + p * RO) / 4u];
        [[unroll]] for (uint q = 0u; q < TK / 4u; ++q) a[q] = As[(r * BKP + c0 + q * RK) / 4u];
        [[unroll]] for (uint i = 0u; i < TO; ++i)
          [[unroll]] for (uint j = 0u; j < TK; ++j) acc[i * TK + j] = fma(d[i / 4u][i % 4u], a[j / 4u][j % 4u], acc[i * TK + j]);
#else
        float d[TO], a[TK];
        [[unroll]] for (uint i = 0u; i < TO; ++i) d[i] = Ds[r * BOP + OA_WGRAD_ROW(i)];
        [[unroll]] for (uint j = 0u; j < TK; ++j) a[j] = As[r * BKP + OA_WGRAD_COL(j)];
        [[unroll]] for (uint i = 0u; i < TO; ++i)
          [[unroll]] for (uint j = 0u; j < TK; ++j) acc[i * TK + j] += d[i] * a[j];
#endif
      }
      barrier();
    }
    if (mb < m_end) {
      [[unroll]] for (uint j = 0u; j < DJ; ++j) OA_WGRAD_SET(Ds, lm * BOP + lk + j * (NT / RM), rd[j]);
      [[unroll]] for (uint j = 0u; j < AJ; ++j) OA_WGRAD_SET(As, lm * BKP + lk + j * (NT / RM), ra[j]);
      barrier();
    }
  }

  const uint out_base = split * pc.aux2;
  [[unroll]] for (uint i = 0u; i < TO; ++i) {
    const uint o = o0 + OA_WGRAD_ROW(i);
    [[unroll]] for (uint j = 0u; j < TK; ++j) {
      const uint k = k0 + OA_WGRAD_COL(j);
      if (o < cng && k < K) dw[out_base + (g * cng + o) * K + k] = acc[i * TK + j];
    }
  }
}

#endif
