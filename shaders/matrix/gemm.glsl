// Batched tiled GEMM: C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias[n]),
// row-major, for batch item b = OA_GROUP_ID.z / splits.
//
// A workgroup computes a BM x BN tile of C; each of its (BM/TM) * (BN/TN)
// invocations holds a TM x TN register block (TM, TN in {4, 8}) in named vec4
// accumulators (acc<row><column group>): NVIDIA's compiler kept a vec4[8][2]
// accumulator array in local memory, 13x slower than named variables on an H200. K advances in
// steps of BK: both operand tiles are staged k-major in shared memory (a row of
// BM or BN floats per k, padded by 4 floats against bank conflicts), and the
// next step's global loads are issued into registers before the current step
// is multiplied. An invocation owns rows {g * BM / (TM/4) + ty * 4 + 0..3} and
// the matching columns, so its shared-memory reads are vec4 and conflict-free.
//
// Split-K: OA_GROUP_ID.z % splits selects the K range [split * kchunk,
// min(K, (split + 1) * kchunk)); the host then points C at a workspace of
// partial products (alpha 1, beta 0, no bias) that matrix/gemm_epilogue sums.
//
// VEC_A / VEC_B / VEC_C: the operand's contiguous extent, offset and batch
// stride are multiples of 4 elements, so it is read (written) as vec4 (four
// 16-bit elements: a uvec2).
//
// The body of matrix/gemm (f32 operands) and, with OA_GEMM_16 defined, of
// matrix/gemm_half: A and B f16 or bf16 (IN_DT), C f32 or A's dtype (C_DT; f32
// for a split-K workspace), the bias f32 or A's dtype (BIAS_DT). Its operands
// are widened to f32 as they are loaded, so the tiles, the multiply-adds and
// the accumulators are the f32 kernel's; a 16-bit C is rounded once, to
// nearest even (matrix/gemm_half_io.glsl). Offsets and strides count elements
// of each operand's dtype.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
#ifdef OA_GEMM_16
#include "matrix/gemm_half_io.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const bool TRANS_A = false;
layout(constant_id = 7) const bool TRANS_B = false;
layout(constant_id = 8) const bool VEC_A = false;
layout(constant_id = 9) const bool VEC_B = false;
layout(constant_id = 10) const bool VEC_C = false;

const uint THREADS = (BM / TM) * (BN / TN);
const uint SA = BM + 4u;  // floats per k-row of the A tile
const uint SB = BN + 4u;
const uint RM = BM / (TM / 4u);  // distance between an invocation's 4-row groups
const uint RN = BN / (TN / 4u);
const uint LA = BM * BK / (4u * THREADS);  // 4-float loads per invocation per A tile
const uint LB = BN * BK / (4u * THREADS);

#ifdef OA_GEMM_16
// Dtype codes (matrix/gemm_half_io.glsl) of A and B (1 or 2), C and the bias (0 or A's).
layout(constant_id = 11) const uint IN_DT = 1;
layout(constant_id = 12) const uint C_DT = 0;
layout(constant_id = 13) const uint BIAS_DT = 0;
layout(std430, binding = 0) readonly buffer A1 { uint a1[]; };
layout(std430, binding = 0) readonly buffer A4 { uvec2 a4[]; };
layout(std430, binding = 1) readonly buffer B1 { uint b1[]; };
layout(std430, binding = 1) readonly buffer B4 { uvec2 b4[]; };
layout(std430, binding = 2) buffer C1 { uint c1[]; };
layout(std430, binding = 2) buffer C2 { uvec2 c2[]; };
layout(std430, binding = 2) buffer C4 { uvec4 c4[]; };
layout(std430, binding = 3) readonly buffer Bias { uint bias[]; };
#define OA_C4(q) (C_DT == 0u ? uintBitsToFloat(c4[q]) : oa_half_quad(c2[q], C_DT))
#define OA_SET_C4(q, v)                 \
  if (C_DT == 0u) {                     \
    c4[q] = floatBitsToUint(v);         \
  } else {                              \
    c2[q] = oa_pack_quad(v, C_DT);      \
  }
#else
layout(std430, binding = 0) readonly buffer A1 { float a1[]; };
layout(std430, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(std430, binding = 1) readonly buffer B1 { float b1[]; };
layout(std430, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, binding = 2) buffer C1 { float c1[]; };
layout(std430, binding = 2) buffer C4 { vec4 c4[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
#define OA_A1(i) a1[i]
#define OA_A4(q) a4[q]
#define OA_B1(i) b1[i]
#define OA_B4(q) b4[q]
#define OA_C1(i) c1[i]
#define OA_SET_C1(i, v) c1[i] = v
#define OA_C4(q) c4[q]
#define OA_SET_C4(q, v) c4[q] = v
#define OA_BIAS(i) bias[i]
#endif

#include "matrix/gemm.push.h"

shared vec4 As[BK * SA / 4u];
shared vec4 Bs[BK * SB / 4u];

vec4 ra[LA];
vec4 rb[LB];
uint tid, m0, n0, kend, abase, bbase;

// Global loads of the A tile at k0 into registers (zero outside the problem).
void load_a(uint k0) {
  [[unroll]] for (uint l = 0u; l < LA; ++l) {
    if (!TRANS_A) {  // A_b is [M, K]: k is contiguous
      if (VEC_A) {
        uint v = tid + l * THREADS, row = v / (BK / 4u), k = k0 + (v % (BK / 4u)) * 4u, m = m0 + row;
        ra[l] = (m < pc.M && k < kend) ? OA_A4((abase + m * pc.K + k) >> 2) : vec4(0.0);
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, m = m0 + e / BK, k = k0 + e % BK;
          ra[l][c] = (m < pc.M && k < kend) ? OA_A1(abase + m * pc.K + k) : 0.0;
        }
      }
    } else {  // A_b is [K, M]: m is contiguous
      if (VEC_A) {
        uint v = tid + l * THREADS, k = k0 + v / (BM / 4u), m = m0 + (v % (BM / 4u)) * 4u;
        ra[l] = (m < pc.M && k < kend) ? OA_A4((abase + k * pc.M + m) >> 2) : vec4(0.0);
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, k = k0 + e / BM, m = m0 + e % BM;
          ra[l][c] = (m < pc.M && k < kend) ? OA_A1(abase + k * pc.M + m) : 0.0;
        }
      }
    }
  }
}

void store_a() {
  [[unroll]] for (uint l = 0u; l < LA; ++l) {
    if (!TRANS_A) {
      if (VEC_A) {
        uint v = tid + l * THREADS, row = v / (BK / 4u), k = (v % (BK / 4u)) * 4u;
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint f = (k + c) * SA + row;
          As[f >> 2][f & 3u] = ra[l][c];
        }
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, f = (e % BK) * SA + e / BK;
          As[f >> 2][f & 3u] = ra[l][c];
        }
      }
    } else {
      if (VEC_A) {
        uint v = tid + l * THREADS;
        As[(v / (BM / 4u)) * (SA / 4u) + v % (BM / 4u)] = ra[l];
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, f = (e / BM) * SA + e % BM;
          As[f >> 2][f & 3u] = ra[l][c];
        }
      }
    }
  }
}

// Global loads of the B tile at k0 (op(B_b) is [K, N]).
void load_b(uint k0) {
  [[unroll]] for (uint l = 0u; l < LB; ++l) {
    if (!TRANS_B) {  // B_b is [K, N]: n is contiguous
      if (VEC_B) {
        uint v = tid + l * THREADS, k = k0 + v / (BN / 4u), n = n0 + (v % (BN / 4u)) * 4u;
        rb[l] = (n < pc.N && k < kend) ? OA_B4((bbase + k * pc.N + n) >> 2) : vec4(0.0);
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, k = k0 + e / BN, n = n0 + e % BN;
          rb[l][c] = (n < pc.N && k < kend) ? OA_B1(bbase + k * pc.N + n) : 0.0;
        }
      }
    } else {  // B_b is [N, K]: k is contiguous
      if (VEC_B) {
        uint v = tid + l * THREADS, n = n0 + v / (BK / 4u), k = k0 + (v % (BK / 4u)) * 4u;
        rb[l] = (n < pc.N && k < kend) ? OA_B4((bbase + n * pc.K + k) >> 2) : vec4(0.0);
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, n = n0 + e / BK, k = k0 + e % BK;
          rb[l][c] = (n < pc.N && k < kend) ? OA_B1(bbase + n * pc.K + k) : 0.0;
        }
      }
    }
  }
}

void store_b() {
  [[unroll]] for (uint l = 0u; l < LB; ++l) {
    if (!TRANS_B) {
      if (VEC_B) {
        uint v = tid + l * THREADS;
        Bs[(v / (BN / 4u)) * (SB / 4u) + v % (BN / 4u)] = rb[l];
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, f = (e / BN) * SB + e % BN;
          Bs[f >> 2][f & 3u] = rb[l][c];
        }
      }
    } else {
      if (VEC_B) {
        uint v = tid + l * THREADS, col = v / (BK / 4u), k = (v % (BK / 4u)) * 4u;
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint f = (k + c) * SB + col;
          Bs[f >> 2][f & 3u] = rb[l][c];
        }
      } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint e = tid + (l * 4u + c) * THREADS, f = (e % BK) * SB + e / BK;
          Bs[f >> 2][f & 3u] = rb[l][c];
        }
      }
    }
  }
}

// C at block row i, column group g: alpha * acc (+ beta * C) (+ bias).
void store_c(uint cbase, uint i, uint g, uint ty, uint tx, vec4 acc) {
  const uint m = m0 + (i / 4u) * RM + ty * 4u + i % 4u, n = n0 + g * RN + tx * 4u;
  if (m >= pc.M || n >= pc.N) return;
  const uint at = cbase + m * pc.N + n;
  vec4 v = pc.alpha * acc;
  if (VEC_C) {
    if (pc.beta != 0.0) v += pc.beta * OA_C4(at >> 2);
    if (pc.has_bias != 0u)
      v += vec4(OA_BIAS(pc.bias_off + n), OA_BIAS(pc.bias_off + n + 1u), OA_BIAS(pc.bias_off + n + 2u), OA_BIAS(pc.bias_off + n + 3u));
    OA_SET_C4(at >> 2, v);
  } else {
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      if (n + c < pc.N) {
        float r = v[c];
        if (pc.beta != 0.0) r += pc.beta * OA_C1(at + c);
        if (pc.has_bias != 0u) r += OA_BIAS(pc.bias_off + n + c);
        OA_SET_C1(at + c, r);
      }
    }
  }
}

void main() {
  tid = gl_LocalInvocationID.x;
  const uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  const uvec3 group = OA_GROUP_ID;
  const uint item = group.z / pc.splits, split = group.z % pc.splits;
  m0 = group.y * BM;
  n0 = group.x * BN;
  const uint kbeg = split * pc.kchunk;
  kend = min(pc.K, kbeg + pc.kchunk);
  abase = pc.a_off + item * pc.a_stride;
  bbase = pc.b_off + item * pc.b_stride;

  // acc<i><g>: row i of the block, columns 4g..4g+3; rows >= TM and groups >= TN/4 fold away.
  vec4 acc00 = vec4(0.0), acc10 = vec4(0.0), acc20 = vec4(0.0), acc30 = vec4(0.0);
  vec4 acc40 = vec4(0.0), acc50 = vec4(0.0), acc60 = vec4(0.0), acc70 = vec4(0.0);
  vec4 acc01 = vec4(0.0), acc11 = vec4(0.0), acc21 = vec4(0.0), acc31 = vec4(0.0);
  vec4 acc41 = vec4(0.0), acc51 = vec4(0.0), acc61 = vec4(0.0), acc71 = vec4(0.0);

  if (kbeg < kend) {
    load_a(kbeg);
    load_b(kbeg);
  }
  for (uint k0 = kbeg; k0 < kend; k0 += BK) {
    barrier();  // the previous step's reads of As / Bs are done
    store_a();
    store_b();
    barrier();
    if (k0 + BK < kend) {
      load_a(k0 + BK);
      load_b(k0 + BK);
    }
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      const vec4 a0 = As[(kk * SA) / 4u + ty], b0 = Bs[(kk * SB) / 4u + tx];
      const vec4 a1 = TM == 8u ? As[(kk * SA + RM) / 4u + ty] : vec4(0.0);
      const vec4 b1 = TN == 8u ? Bs[(kk * SB + RN) / 4u + tx] : vec4(0.0);
#define OA_GEMM_ROW(i, a)                                   \
  acc##i##0 = fma(vec4(a), b0, acc##i##0);                  \
  if (TN == 8u) acc##i##1 = fma(vec4(a), b1, acc##i##1);
      OA_GEMM_ROW(0, a0.x) OA_GEMM_ROW(1, a0.y) OA_GEMM_ROW(2, a0.z) OA_GEMM_ROW(3, a0.w)
      if (TM == 8u) {
        OA_GEMM_ROW(4, a1.x) OA_GEMM_ROW(5, a1.y) OA_GEMM_ROW(6, a1.z) OA_GEMM_ROW(7, a1.w)
      }
#undef OA_GEMM_ROW
    }
  }

  const uint cbase = pc.c_off + item * pc.c_stride + split * pc.c_split_stride;
#define OA_GEMM_STORE(i)                                    \
  store_c(cbase, uint(i), 0u, ty, tx, acc##i##0);            \
  if (TN == 8u) store_c(cbase, uint(i), 1u, ty, tx, acc##i##1);
  OA_GEMM_STORE(0) OA_GEMM_STORE(1) OA_GEMM_STORE(2) OA_GEMM_STORE(3)
  if (TM == 8u) {
    OA_GEMM_STORE(4) OA_GEMM_STORE(5) OA_GEMM_STORE(6) OA_GEMM_STORE(7)
  }
#undef OA_GEMM_STORE
}
