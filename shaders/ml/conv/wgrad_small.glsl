#ifndef OA_CONV_WGRAD_SMALL_GLSL
#define OA_CONV_WGRAD_SMALL_GLSL
// Weight gradient for few weights per output channel (depthwise and small
// grouped kernels: K = CWg * KH * KW <= MAXK), where a GEMM tile would be mostly
// padding. Workgroup (x = split, y = block of OB output channels) reduces the
// split's range of narrow positions m = (n, yn, xn):
//   dW[o, k = (c, kh, kw)] = sum_m D[n, o, yn, xn] * wide[n, g*CWg + c, yn*sh - ph + kh*dh, xn*sw - pw + kw*dw]
// Each invocation accumulates all OB x K sums over a strided share of the
// positions, each wide value read once for the OB channels (OB > 1 needs one
// group: the channels then share their wide values); the workgroup then adds
// the 256 invocations' sums (common/reduce.glsl), one weight at a time. Splits write partial results (aux2 floats apart) that ml/conv/reduce sums
// in a fixed order. Push aux0: splits; aux1: positions per split.
// MAXK and OB are fixed by the including variant file (wgrad_small<MAXK>.comp
// defines OA_MAXK, and OA_OB where OB > 1) so the accumulators unroll into registers; the per-weight offsets
// live in shared memory, read uniformly.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/wgrad_io.glsl"
#include "common/reduce.glsl"

layout(local_size_x = 256) in;
const uint MAXK = OA_MAXK;
#ifndef OA_OB
#define OA_OB 1
#endif
const uint OB = OA_OB;

shared uint k_off[MAXK];  // wide channel plane of weight k
shared int k_dy[MAXK];    // its row offset kh * dh
shared int k_dx[MAXK];    // its column offset kw * dw

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint split = OA_GROUP_ID.x;
  const uint o0 = OA_GROUP_ID.y * OB;  // first output channel of the narrow tensor
  const uint khw = pc.kh * pc.kw;
  const uint cng = pc.cn / pc.groups, cwg = pc.cw / pc.groups;
  const uint g = o0 / cng;
  const uint K = cwg * khw;
  const uint hwn = pc.hn * pc.wn, hww = pc.hw * pc.ww;
  const uint M = pc.n * hwn;
  const uint m_begin = split * pc.aux1;
  const uint m_end = min(M, m_begin + pc.aux1);

  for (uint k = tid; k < MAXK; k += 256u) {
    const uint kk = min(k, K - 1u);
    const uint c = kk / khw;
    const uint rem = kk - c * khw;
    const uint kh = rem / pc.kw;
    k_off[k] = (g * cwg + c) * hww;
    k_dy[k] = int(kh * pc.dh);
    k_dx[k] = int((rem - kh * pc.kw) * pc.dw);
  }
  barrier();
  float acc[OB * MAXK];
  [[unroll]] for (uint k = 0u; k < OB * MAXK; ++k) acc[k] = 0.0;

  for (uint m = m_begin + tid; m < m_end; m += 256u) {
    const uint n = m / hwn;
    const uint p = m - n * hwn;
    const uint yn = p / pc.wn;
    const int iy0 = int(yn * pc.sh) - int(pc.ph);
    const int ix0 = int((p - yn * pc.wn) * pc.sw) - int(pc.pw);
    float d[OB];
    [[unroll]] for (uint j = 0u; j < OB; ++j) d[j] = o0 + j < pc.cn ? dn[(n * pc.cn + o0 + j) * hwn + p] : 0.0;
    const uint base = n * pc.cw * hww;
    [[unroll]] for (uint k = 0u; k < MAXK; ++k) {
      if (k >= K) break;  // uniform
      const int iy = iy0 + k_dy[k];
      const int ix = ix0 + k_dx[k];
      if (iy >= 0 && iy < int(pc.hw) && ix >= 0 && ix < int(pc.ww)) {
        const float x = xw[base + k_off[k] + uint(iy) * pc.ww + uint(ix)];
        [[unroll]] for (uint j = 0u; j < OB; ++j) acc[j * MAXK + k] += d[j] * x;
      }
    }
  }

  [[unroll]] for (uint j = 0u; j < OB; ++j)
    [[unroll]] for (uint k = 0u; k < MAXK; ++k) {
      if (k < K && o0 + j < pc.cn) {  // uniform
        const float s = oa_workgroup_sum(acc[j * MAXK + k]);
        if (tid == 0u) dw[split * pc.aux2 + (o0 + j) * K + k] = s;
      }
    }
}

#endif
