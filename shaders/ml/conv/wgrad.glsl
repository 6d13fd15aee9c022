#ifndef OA_CONV_WGRAD_GLSL
#define OA_CONV_WGRAD_GLSL
// Weight gradient of the convolution relation (geometry.glsl) as a GEMM over
// narrow positions m = (n, yn, xn):
//   dW[g*CNg + o, c, kh, kw] = sum_m D[n, g*CNg + o, yn, xn] * A[m, (c, kh, kw)]
// with D the narrow tensor (the convolution's output gradient, or the
// transposed convolution's input) and A gathered on the fly from the wide
// tensor. Each workgroup computes a BO x BKK tile of one group over one split
// of the m range (workgroup z = group * splits + split), staging RM positions
// at a time in shared memory; each invocation holds TO x TK sums. Splits write
// separate partial results (aux2 floats apart) that ml/conv/reduce sums in a fixed
// order. Push aux0: splits; aux1: positions per split (a multiple of RM).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/wgrad_io.glsl"

// The tile shape is fixed by the including variant file (wgrad_<BO>x<BKK>.comp
// defines OA_BO, OA_BKK, OA_TO, OA_TK) so the register tiles unroll.
const uint BO = OA_BO, BKK = OA_BKK, TO = OA_TO, TK = OA_TK;
layout(local_size_x = (OA_BO / OA_TO) * (OA_BKK / OA_TK)) in;
const uint RM = 16u;
const uint BOP = BO + 1u, BKP = BKK + 1u;  // padded rows: conflict-free column stores

shared float Ds[RM * BOP];
shared float As[RM * BKP];

void main() {
  const uint NT = (BO / TO) * (BKK / TK);
  const uint AJ = RM * BKK / NT;
  const uint DJ = RM * BO / NT;
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

  // This invocation's gather columns never change: decompose them once.
  const uint lm = tid % RM;
  const uint lk = tid / RM;
  uint k_off[RM * BKK / ((BO / TO) * (BKK / TK))];
  int k_dy[RM * BKK / ((BO / TO) * (BKK / TK))];
  int k_dx[RM * BKK / ((BO / TO) * (BKK / TK))];
  bool k_ok[RM * BKK / ((BO / TO) * (BKK / TK))];
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

  for (uint mb = m_begin; mb < m_end; mb += RM) {
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
      const uint o = lk + j * (NT / RM);
      Ds[lm * BOP + o] = (m_ok && o0 + o < cng) ? dn[(n * pc.cn + g * cng + o0 + o) * hwn + p] : 0.0;
    }
    const uint wbase = n * pc.cw * hww;
    [[unroll]] for (uint j = 0u; j < AJ; ++j) {
      float v = 0.0;
      const int iy = iy0 + k_dy[j];
      const int ix = ix0 + k_dx[j];
      if (m_ok && k_ok[j] && iy >= 0 && iy < int(pc.hw) && ix >= 0 && ix < int(pc.ww))
        v = xw[wbase + k_off[j] + uint(iy) * pc.ww + uint(ix)];
      As[lm * BKP + lk + j * (NT / RM)] = v;
    }
    barrier();
    [[unroll]] for (uint r = 0u; r < RM; ++r) {
      float d[TO];
      float a[TK];
      [[unroll]] for (uint i = 0u; i < TO; ++i) d[i] = Ds[r * BOP + ty + i * (BO / TO)];
      [[unroll]] for (uint j = 0u; j < TK; ++j) a[j] = As[r * BKP + tx + j * (BKK / TK)];
      [[unroll]] for (uint i = 0u; i < TO; ++i)
        [[unroll]] for (uint j = 0u; j < TK; ++j) acc[i * TK + j] += d[i] * a[j];
    }
    barrier();
  }

  const uint out_base = split * pc.aux2;
  [[unroll]] for (uint i = 0u; i < TO; ++i) {
    const uint o = o0 + ty + i * (BO / TO);
    [[unroll]] for (uint j = 0u; j < TK; ++j) {
      const uint k = k0 + tx + j * (BKK / TK);
      if (o < cng && k < K) dw[out_base + (g * cng + o) * K + k] = acc[i * TK + j];
    }
  }
}

#endif
