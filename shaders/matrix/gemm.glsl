// Batched tiled GEMM: C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias[n]),
// row-major, for batch item b = OA_GROUP_ID.z / splits.
//
// A workgroup computes a BM x BN tile of C; each of its (BM/TM) * (BN/TN)
// invocations holds a TM x TN register block (TM, TN in {4, 8}) in named vec4
// accumulators (acc<row><column group>): NVIDIA's compiler kept a vec4[8][2]
// accumulator array in local memory, 13x slower than named variables on an
// H200. K advances in steps of BK: both operand tiles are staged k-major in
// shared memory (a row of BM or BN floats per k, padded by 4 floats against
// bank conflicts), and the next step's global loads are issued into registers
// before the current step is multiplied.
//
// Invocation layout: the tile is cut into WM x WN blocks (WM = WN = 0: one
// block, the whole tile), each covered by (WM/TM) * (WN/TN) consecutive
// invocations (with 32 of them, one NVIDIA subgroup: a compact block whose
// shared-memory reads touch few distinct addresses). Within its block an
// invocation at (ly, lx) owns the 4x4 pieces at rows g * WM/(TM/4) + ly * 4 +
// 0..3 and columns h * WN/(TN/4) + lx * 4 + 0..3, so its shared-memory reads
// are vec4 and conflict-free.
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
// nearest even (common/half_io.glsl). Offsets and strides count elements
// of each operand's dtype.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
#include "matrix/gemm_tile_spec.glsl"

layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 10) const bool VEC_C = false;
layout(constant_id = 11) const uint WM_SPEC = 0;  // the invocation layout's block (0: BM, BN)
layout(constant_id = 12) const uint WN_SPEC = 0;

const uint THREADS = (BM / TM) * (BN / TN);
const uint SA = BM + 4u;  // floats per k-row of the A tile
const uint SB = BN + 4u;
const uint WM = WM_SPEC == 0u ? BM : WM_SPEC;
const uint WN = WN_SPEC == 0u ? BN : WN_SPEC;
const uint RM = WM / (TM / 4u);  // distance between an invocation's 4-row pieces
const uint RN = WN / (TN / 4u);
const uint LA = BM * BK / (4u * THREADS);  // 4-float loads per invocation per A tile
const uint LB = BN * BK / (4u * THREADS);

#ifdef OA_GEMM_16
// Dtype codes (common/half_io.glsl) of A and B (1 or 2), C and the bias (0 or A's).
layout(constant_id = 13) const uint IN_DT = 1;
layout(constant_id = 14) const uint C_DT = 0;
layout(constant_id = 15) const uint BIAS_DT = 0;
#endif
#include "matrix/gemm_operands.glsl"
#ifdef OA_GEMM_16
layout(std430, binding = 2) buffer C2 { uvec2 c2[]; };
layout(std430, binding = 2) buffer C4 { uvec4 c4[]; };
#define OA_C4(q) (C_DT == 0u ? uintBitsToFloat(c4[q]) : oa_half_quad(c2[q], C_DT))
#define OA_SET_C4(q, v)                 \
  if (C_DT == 0u) {                     \
    c4[q] = floatBitsToUint(v);         \
  } else {                              \
    c2[q] = oa_pack_quad(v, C_DT);      \
  }
#else
layout(std430, binding = 2) buffer C4 { vec4 c4[]; };
#define OA_C4(q) c4[q]
#define OA_SET_C4(q, v) c4[q] = v
#endif

shared vec4 As[BK * SA / 4u];
shared vec4 Bs[BK * SB / 4u];

vec4 ra[LA];
vec4 rb[LB];
uint tid, m0, n0;

// An operand tile at k0 as global loads into the registers R (L vec4 per
// invocation), zero outside the problem: the operand's extent X (M or N) from
// x0 over BX, stored X-major (K_MAJOR: [X, K], k contiguous) or [K, X] (X
// contiguous), at base; LOAD1 / LOAD4 read an element / a quad of it.
#define OA_GEMM_LOAD_TILE(R, L, K_MAJOR, VEC, BX, X, x0, base, LOAD1, LOAD4)                          \
  [[unroll]] for (uint l = 0u; l < L; ++l) {                                                          \
    if (K_MAJOR) {                                                                                    \
      if (VEC) {                                                                                      \
        uint v = tid + l * THREADS, x = x0 + v / (BK / 4u), k = k0 + (v % (BK / 4u)) * 4u;            \
        R[l] = (x < X && k < kend) ? LOAD4((base + x * pc.K + k) >> 2) : vec4(0.0);                   \
      } else {                                                                                        \
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
          uint e = tid + (l * 4u + c) * THREADS, x = x0 + e / BK, k = k0 + e % BK;                    \
          R[l][c] = (x < X && k < kend) ? LOAD1(base + x * pc.K + k) : 0.0;                           \
        }                                                                                             \
      }                                                                                               \
    } else {                                                                                          \
      if (VEC) {                                                                                      \
        uint v = tid + l * THREADS, k = k0 + v / (BX / 4u), x = x0 + (v % (BX / 4u)) * 4u;            \
        R[l] = (x < X && k < kend) ? LOAD4((base + k * X + x) >> 2) : vec4(0.0);                      \
      } else {                                                                                        \
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
          uint e = tid + (l * 4u + c) * THREADS, k = k0 + e / BX, x = x0 + e % BX;                    \
          R[l][c] = (x < X && k < kend) ? LOAD1(base + k * X + x) : 0.0;                              \
        }                                                                                             \
      }                                                                                               \
    }                                                                                                 \
  }

// The registers R of OA_GEMM_LOAD_TILE into the k-major shared tile S (rows of
// LD floats).
#define OA_GEMM_STORE_TILE(S, R, L, K_MAJOR, VEC, BX, LD)                                              \
  [[unroll]] for (uint l = 0u; l < L; ++l) {                                                          \
    if (K_MAJOR) {                                                                                    \
      if (VEC) {                                                                                      \
        uint v = tid + l * THREADS, x = v / (BK / 4u), k = (v % (BK / 4u)) * 4u;                      \
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
          uint f = (k + c) * LD + x;                                                                  \
          S[f >> 2][f & 3u] = R[l][c];                                                                \
        }                                                                                             \
      } else {                                                                                        \
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
          uint e = tid + (l * 4u + c) * THREADS, f = (e % BK) * LD + e / BK;                          \
          S[f >> 2][f & 3u] = R[l][c];                                                                \
        }                                                                                             \
      }                                                                                               \
    } else {                                                                                          \
      if (VEC) {                                                                                      \
        uint v = tid + l * THREADS;                                                                   \
        S[(v / (BX / 4u)) * (LD / 4u) + v % (BX / 4u)] = R[l];                                        \
      } else {                                                                                        \
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {                                                   \
          uint e = tid + (l * 4u + c) * THREADS, f = (e / BX) * LD + e % BX;                          \
          S[f >> 2][f & 3u] = R[l][c];                                                                \
        }                                                                                             \
      }                                                                                               \
    }                                                                                                 \
  }

// op(A_b) is [M, K]; A_b is stored [M, K] or (TRANS_A) [K, M].
void load_a(uint k0) { OA_GEMM_LOAD_TILE(ra, LA, !TRANS_A, VEC_A, BM, pc.M, m0, abase, OA_A1, OA_A4) }
void store_a() { OA_GEMM_STORE_TILE(As, ra, LA, !TRANS_A, VEC_A, BM, SA) }
// op(B_b) is [K, N]; B_b is stored [K, N] or (TRANS_B) [N, K].
void load_b(uint k0) { OA_GEMM_LOAD_TILE(rb, LB, TRANS_B, VEC_B, BN, pc.N, n0, bbase, OA_B1, OA_B4) }
void store_b() { OA_GEMM_STORE_TILE(Bs, rb, LB, TRANS_B, VEC_B, BN, SB) }

// C at block row i, column group g of the invocation whose first piece is at
// (r0, c0) of the tile: alpha * acc (+ beta * C) (+ bias).
void store_c(uint i, uint g, uint r0, uint c0, vec4 acc) {
  const uint m = m0 + r0 + (i / 4u) * RM + i % 4u, n = n0 + c0 + g * RN;
  if (m >= pc.M || n >= pc.N) return;
  const uint at = gemm_c_base() + m * pc.N + n;
  vec4 v = pc.alpha * acc;
  if (VEC_C) {
    if (pc.beta != 0.0) v += pc.beta * OA_C4(at >> 2);
    if (pc.has_bias != 0u)
      v += vec4(OA_BIAS(pc.bias_off + n), OA_BIAS(pc.bias_off + n + 1u), OA_BIAS(pc.bias_off + n + 2u), OA_BIAS(pc.bias_off + n + 3u));
    OA_SET_C4(at >> 2, v);
  } else {
    [[unroll]] for (uint c = 0u; c < 4u; ++c)
      if (n + c < pc.N) store_c1(at + c, n + c, v[c]);
  }
}

void main() {
  tid = gl_LocalInvocationID.x;
  // This invocation's block (blocks row-major over the tile) and place in it.
  const uint per_block = (WM / TM) * (WN / TN), block = tid / per_block, lane = tid % per_block;
  const uint r0 = (block / (BN / WN)) * WM + (lane / (WN / TN)) * 4u;
  const uint c0 = (block % (BN / WN)) * WN + (lane % (WN / TN)) * 4u;
  const uvec3 group = OA_GROUP_ID;
  m0 = group.y * BM;
  n0 = group.x * BN;
  const uint kbeg = gemm_split_begin();

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
      const uint ar = kk * (SA / 4u) + r0 / 4u, br = kk * (SB / 4u) + c0 / 4u;
      const vec4 a0 = As[ar], b0 = Bs[br];
      const vec4 a1 = TM == 8u ? As[ar + RM / 4u] : vec4(0.0);
      const vec4 b1 = TN == 8u ? Bs[br + RN / 4u] : vec4(0.0);
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

#define OA_GEMM_STORE(i)                                    \
  store_c(uint(i), 0u, r0, c0, acc##i##0);                  \
  if (TN == 8u) store_c(uint(i), 1u, r0, c0, acc##i##1);
  OA_GEMM_STORE(0) OA_GEMM_STORE(1) OA_GEMM_STORE(2) OA_GEMM_STORE(3)
  if (TM == 8u) {
    OA_GEMM_STORE(4) OA_GEMM_STORE(5) OA_GEMM_STORE(6) OA_GEMM_STORE(7)
  }
#undef OA_GEMM_STORE
}
