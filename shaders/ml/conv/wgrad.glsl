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
// where an invocation reads four consecutive values at once.
const uint BOP = BO + (TO % 4u == 0u ? 4u : 1u), BKP = BKK + (TK % 4u == 0u ? 4u : 1u);

shared float Ds[RM * BOP];
shared float As[RM * BKP];

// The tile column (of B) that register i of lane t holds, with T per lane:
// runs of four consecutive columns where T is a multiple of four (read as one
// vector), else every (B / T)-th column.
uint tile_col(uint i, uint B, uint T, uint t) {
  return T % 4u == 0u ? (i / 4u) * (B * 4u / T) + t * 4u + (i % 4u) : t + i * (B / T);
}

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

  const uint tx = tid % (BKK / TK);
  const uint ty = tid / (BKK / TK);
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
        float d[TO];
        float a[TK];
        [[unroll]] for (uint i = 0u; i < TO; ++i) d[i] = Ds[r * BOP + tile_col(i, BO, TO, ty)];
        [[unroll]] for (uint j = 0u; j < TK; ++j) a[j] = As[r * BKP + tile_col(j, BKK, TK, tx)];
        [[unroll]] for (uint i = 0u; i < TO; ++i)
          [[unroll]] for (uint j = 0u; j < TK; ++j) acc[i * TK + j] += d[i] * a[j];
      }
      barrier();
    }
    if (mb < m_end) {
      [[unroll]] for (uint j = 0u; j < DJ; ++j) Ds[lm * BOP + lk + j * (NT / RM)] = rd[j];
      [[unroll]] for (uint j = 0u; j < AJ; ++j) As[lm * BKP + lk + j * (NT / RM)] = ra[j];
      barrier();
    }
  }

  const uint out_base = split * pc.aux2;
  [[unroll]] for (uint i = 0u; i < TO; ++i) {
    const uint o = o0 + tile_col(i, BO, TO, ty);
    [[unroll]] for (uint j = 0u; j < TK; ++j) {
      const uint k = k0 + tile_col(j, BKK, TK, tx);
      if (o < cng && k < K) dw[out_base + (g * cng + o) * K + k] = acc[i * TK + j];
    }
  }
}

#endif
