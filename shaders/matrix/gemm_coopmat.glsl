// Batched GEMM on the tensor cores (GL_KHR_cooperative_matrix, subgroup scope):
// C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias[n]), row-major, A and B
// f16 (16-bit patterns in uint buffers), products accumulated in f32, C f32 or of A's dtype;
// matrix/gemm_coopmat_bf16 is the same module with bf16 matrices (the build
// rewrites its one 16-bit float type, tools/spirv_bf16.cpp, so float16_t
// must appear only as a cooperative-matrix component type here);
// batch item b = OA_GROUP_ID.z / splits. The same push constants and split-K
// convention as matrix/gemm (offsets and strides in elements).
//
// A workgroup of WM x WN subgroups computes a BM x BN tile of C; each subgroup
// owns a (BM / WM) x (BN / WN) block as 16 x 16 f32 accumulator matrices. K
// advances in steps of BK: the operand tiles are copied from global memory into
// shared memory as stored (A as [BM, BK] or, with TRANS_A, [BK, BM]; B as
// [BK, BN] or [BN, BK]), 8 halves (a uvec4) per copy, rows padded by 8 halves
// against bank conflicts, and coopMatLoad reads them row- or column-major. The
// next step's global loads are issued into registers before the current tiles
// are multiplied. With STAGES = 2 they are then stored into the other shared
// stage (one barrier a step); with STAGES = 1 (half the shared memory, for
// larger tiles or a longer K step) into the same one between two barriers.
// Elements outside the problem (M, N and K edges) are zeros.
//
// C is f32 (C_DT = 0) or of A's 16-bit dtype (C_DT its code); the bias f32
// (BIAS_DT = 0), or with a 16-bit C of C's dtype. Epilogue: an f32 16 x 16
// block entirely inside C goes straight to global memory with coopMatStore
// when DIRECT_C (C's row length, offset and strides are multiples of 4 floats)
// and there is no bias; any other block goes through a per-subgroup 16 x 16
// f32 scratch laid over the shared tiles, then to C element by element; a
// 16-bit C's block entirely inside C goes as uvec4s of 8 elements (rounded to
// nearest even) when DIRECT_C (C's row length, offset and strides multiples
// of 8 elements), other blocks by pairs of columns where a pair fills a word.
//
// VEC_A / VEC_B: the operand's contiguous extent, offset and batch stride are
// multiples of 8 elements, so a copy is one uvec4 load; otherwise 8 half loads.
//
// Hooks an includer may define before including this file (each compiles
// away where it is not defined; ml/conv/igemm_coopmat.glsl uses both, with
// matrix/gemm_operands.glsl's OA_GEMM_OWN_PUSH):
// - OA_GEMM_GATHER_B(k, n): B_b is not stored; the expression gives the copy
//   of op(B_b)[k, n .. n + 7] (TRANS_B false) or of op(B_b)[k .. k + 7, n]
//   (TRANS_B: the tile is staged [BN, BK], as a B_b stored [N, K]) for the
//   current batch item (bbase): a uvec4 of 8 halves, the first in the low
//   half of .x, zeros past K and N. Needs VEC_B false (the host passes it so).
// - OA_GEMM_ROW_BIAS: the bias is per row of C (bias[bias_off + m]), not per
//   column (bias[bias_off + n]).
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef OA_GEMM_COOPMAT_GLSL
#define OA_GEMM_COOPMAT_GLSL
#include "common/oa.glsl"

#include "matrix/gemm_tile_spec.glsl"
layout(constant_id = 4) const uint WM = 2;
layout(constant_id = 5) const uint WN = 4;
layout(constant_id = 10) const bool DIRECT_C = false;
layout(constant_id = 11) const uint SUBGROUP = 32;
layout(constant_id = 12) const uint STAGES = 2;
layout(constant_id = 13) const uint C_DT = 0;
layout(constant_id = 14) const uint BIAS_DT = 0;

const uint THREADS = WM * WN * SUBGROUP;
const uint FM = BM / WM / 16u;  // accumulator matrices per subgroup along M
const uint FN = BN / WN / 16u;
// Shared tiles as stored, in halves: rows x (columns + 8).
const uint A_COLS = TRANS_A ? BM : BK, A_ROWS = TRANS_A ? BK : BM, A_LD = A_COLS + 8u;
const uint B_COLS = TRANS_B ? BK : BN, B_ROWS = TRANS_B ? BN : BK, B_LD = B_COLS + 8u;
const uint A_WORDS = A_ROWS * A_LD / 8u, B_WORDS = B_ROWS * B_LD / 8u;  // uvec4s per stage
const uint LA = BM * BK / 8u / THREADS;  // uvec4 copies per invocation per A tile
const uint LB = BN * BK / 8u / THREADS;

#define OA_GEMM_PACKED_AB
#include "matrix/gemm_operands.glsl"

// STAGES A tiles, then STAGES B tiles; the host keeps this at least the
// epilogue's WM * WN * 64 uvec4s.
const uint B0 = STAGES * A_WORDS;
shared uvec4 tiles[STAGES * (A_WORDS + B_WORDS)];

// The next K step's copies, in registers.
uvec4 ra[LA];
uvec4 rb[LB];
uint m0, n0;

// The word of two C elements (C_DT 1 or 2), the first in the low half. f16
// takes the device's conversion (packHalf2x16: round to nearest even on
// NVIDIA's tensor-core GPUs), as common/half.glsl's integer one made the f16
// GEMM 13-39% slower on an H100; bf16 takes common/half.glsl's.
uint c_word(vec2 v) { return C_DT == 1u ? packHalf2x16(v) : oa_word_of(v, true, C_DT); }

// Four bias elements from element i.
vec4 bias_quad(uint i) { return vec4(OA_BIAS(i), OA_BIAS(i + 1u), OA_BIAS(i + 2u), OA_BIAS(i + 3u)); }

// The bias of C's element (m, n) (the index store_c1 takes), of the quad
// (m, n .. n + 3) and of the pair (m, n .. n + 1): per column, or per row
// with OA_GEMM_ROW_BIAS. Arguments are pasted unparenthesized (sums of uints),
// so that the plain GEMM's expressions stay as they were.
#ifdef OA_GEMM_ROW_BIAS
#define OA_GEMM_BIAS_INDEX(m, n) (m)
#define OA_GEMM_BIAS_QUAD(m, n) vec4(OA_BIAS(pc.bias_off + m))
#define OA_GEMM_BIAS_PAIR(m, n) vec2(OA_BIAS(pc.bias_off + m))
#else
#define OA_GEMM_BIAS_INDEX(m, n) n
#define OA_GEMM_BIAS_QUAD(m, n) bias_quad(pc.bias_off + n)
#define OA_GEMM_BIAS_PAIR(m, n) vec2(OA_BIAS(pc.bias_off + n), OA_BIAS(pc.bias_off + n + 1u))
#endif

uint half_a(uint e) { return (a1[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu; }
uint half_b(uint e) { return (b1[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu; }

// 8 consecutive halves of A from element e, the first `valid` of them (0..8) real.
uvec4 load8_a(uint e, uint valid) {
  if (VEC_A) return valid == 8u ? a4[e >> 3] : uvec4(0u);
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) h[j] = j < valid ? half_a(e + j) : 0u;
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}
uvec4 load8_b(uint e, uint valid) {
  if (VEC_B) return valid == 8u ? b4[e >> 3] : uvec4(0u);
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) h[j] = j < valid ? half_b(e + j) : 0u;
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

// How many of 8 elements from index i along an extent `end` are inside it.
uint inside(uint i, uint end) { return i >= end ? 0u : min(8u, end - i); }

// Global loads of the tiles at k0 into registers where the tiles lie
// wholly inside A and B (VEC_A and VEC_B): copy v covers row v / (COLS / 8) of
// the stored tile, columns 8 * (v % (COLS / 8)) onward.
void load_inside(uint k0) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint l = 0u; l < LA; ++l) {
    const uint v = tid + l * THREADS, row = v / (A_COLS / 8u), col = (v % (A_COLS / 8u)) * 8u;
    ra[l] = a4[(TRANS_A ? abase + (k0 + row) * pc.M + m0 + col : abase + (m0 + row) * pc.K + k0 + col) >> 3];
  }
  [[unroll]] for (uint l = 0u; l < LB; ++l) {
    const uint v = tid + l * THREADS, row = v / (B_COLS / 8u), col = (v % (B_COLS / 8u)) * 8u;
    rb[l] = b4[(TRANS_B ? bbase + (n0 + row) * pc.K + k0 + col : bbase + (k0 + row) * pc.N + n0 + col) >> 3];
  }
}

// The same loads anywhere, elements outside the problem read as zeros.
void load_tiles(uint k0) {
#ifndef OA_GEMM_GATHER_B
  if (VEC_A && VEC_B && m0 + BM <= pc.M && n0 + BN <= pc.N && k0 + BK <= kend) {
    load_inside(k0);
    return;
  }
#endif
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint l = 0u; l < LA; ++l) {
    const uint v = tid + l * THREADS, row = v / (A_COLS / 8u), col = (v % (A_COLS / 8u)) * 8u;
    if (!TRANS_A) {  // A_b is [M, K]
      const uint m = m0 + row, k = k0 + col;
      ra[l] = m < pc.M ? load8_a(abase + m * pc.K + k, inside(k, kend)) : uvec4(0u);
    } else {  // A_b is [K, M]
      const uint k = k0 + row, m = m0 + col;
      ra[l] = k < kend ? load8_a(abase + k * pc.M + m, inside(m, pc.M)) : uvec4(0u);
    }
  }
  [[unroll]] for (uint l = 0u; l < LB; ++l) {
    const uint v = tid + l * THREADS, row = v / (B_COLS / 8u), col = (v % (B_COLS / 8u)) * 8u;
    if (!TRANS_B) {  // B_b is [K, N]
      const uint k = k0 + row, n = n0 + col;
#ifdef OA_GEMM_GATHER_B
      rb[l] = OA_GEMM_GATHER_B(k, n);
#else
      rb[l] = k < kend ? load8_b(bbase + k * pc.N + n, inside(n, pc.N)) : uvec4(0u);
#endif
    } else {  // B_b is [N, K]
      const uint n = n0 + row, k = k0 + col;
#ifdef OA_GEMM_GATHER_B
      rb[l] = OA_GEMM_GATHER_B(k, n);
#else
      rb[l] = n < pc.N ? load8_b(bbase + n * pc.K + k, inside(k, kend)) : uvec4(0u);
#endif
    }
  }
}

// Stores the registers' copies into shared stage `stage`.
void store_tiles(uint stage) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint l = 0u; l < LA; ++l) {
    const uint v = tid + l * THREADS;
    tiles[stage * A_WORDS + (v / (A_COLS / 8u)) * (A_LD / 8u) + v % (A_COLS / 8u)] = ra[l];
  }
  [[unroll]] for (uint l = 0u; l < LB; ++l) {
    const uint v = tid + l * THREADS;
    tiles[B0 + stage * B_WORDS + (v / (B_COLS / 8u)) * (B_LD / 8u) + v % (B_COLS / 8u)] = rb[l];
  }
}

coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM * FN];

// The COUNT 16 x 16 fragments F[i] of one operand at kk from stage `stage` of
// its shared tile at tiles[BASE] (WORDS uvec4s a stage, rows of LD halves),
// fragment i at x0 + 16 i along M or N: the tile stored X-major (X_ROWS, k
// contiguous) is read with layout X_ROWS_LAYOUT, one stored k-major with
// K_ROWS_LAYOUT.
#define OA_COOP_LOAD_OPERAND(F, COUNT, BASE, WORDS, LD, x0, X_ROWS, X_ROWS_LAYOUT, K_ROWS_LAYOUT)   \
  [[unroll]] for (uint i = 0u; i < COUNT; ++i) {                                                  \
    const uint x = x0 + i * 16u;                                                                  \
    if (X_ROWS)                                                                                   \
      coopMatLoad(F[i], tiles, BASE + stage * WORDS + (x * LD + kk) / 8u, LD / 8u, X_ROWS_LAYOUT);  \
    else                                                                                          \
      coopMatLoad(F[i], tiles, BASE + stage * WORDS + (kk * LD + x) / 8u, LD / 8u, K_ROWS_LAYOUT);  \
  }

void multiply(uint stage, uint wm, uint wn) {
  [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[FM];
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb[FN];
    OA_COOP_LOAD_OPERAND(fa, FM, 0u, A_WORDS, A_LD, wm * (BM / WM), !TRANS_A, gl_CooperativeMatrixLayoutRowMajor,
                         gl_CooperativeMatrixLayoutColumnMajor)
    OA_COOP_LOAD_OPERAND(fb, FN, B0, B_WORDS, B_LD, wn * (BN / WN), TRANS_B, gl_CooperativeMatrixLayoutColumnMajor,
                         gl_CooperativeMatrixLayoutRowMajor)
    [[unroll]] for (uint i = 0u; i < FM; ++i)
      [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], acc[i * FN + j]);
  }
}

void main() {
  const uvec3 group = OA_GROUP_ID;
  m0 = group.y * BM;
  n0 = group.x * BN;
  const uint kbeg = gemm_split_begin();
  const uint sg = gl_SubgroupID, wm = sg / WN, wn = sg % WN;

  [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

  if (kbeg < kend) {
    load_tiles(kbeg);
    store_tiles(0u);
  }
  barrier();
  uint stage = 0u;
  for (uint k0 = kbeg; k0 < kend; k0 += BK) {
    const bool more = k0 + BK < kend;
    if (more) load_tiles(k0 + BK);
    multiply(stage, wm, wn);
    if (STAGES == 1u) {
      barrier();
      if (more) {
        store_tiles(0u);
        barrier();
      }
    } else {
      if (more) store_tiles(stage ^ 1u);
      barrier();
      stage ^= 1u;
    }
  }

  const uint lane = gl_SubgroupInvocationID;
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      const uint gm = m0 + wm * (BM / WM) + i * 16u, gn = n0 + wn * (BN / WN) + j * 16u;
      if (gm >= pc.M || gn >= pc.N) continue;
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> r = acc[i * FN + j] * pc.alpha;
      if (C_DT == 0u && DIRECT_C && pc.has_bias == 0u && gm + 16u <= pc.M && gn + 16u <= pc.N) {
        if (pc.beta != 0.0) {
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c;
          coopMatLoad(c, c1, gemm_c_base() + gm * pc.N + gn, pc.N, gl_CooperativeMatrixLayoutRowMajor);
          r += c * pc.beta;
        }
        coopMatStore(r, c1, gemm_c_base() + gm * pc.N + gn, pc.N, gl_CooperativeMatrixLayoutRowMajor);
        continue;
      }
      coopMatStore(r, tiles, sg * 64u, 4u, gl_CooperativeMatrixLayoutRowMajor);
      subgroupBarrier();
      if (C_DT == 0u) {
        for (uint e = lane; e < 256u; e += SUBGROUP) {
          const uint m = gm + e / 16u, n = gn + e % 16u;
          if (m < pc.M && n < pc.N) store_c1(gemm_c_base() + m * pc.N + n, OA_GEMM_BIAS_INDEX(m, n), uintBitsToFloat(tiles[sg * 64u + e / 4u][e % 4u]));
        }
      } else if (DIRECT_C && gm + 16u <= pc.M && gn + 16u <= pc.N) {
        for (uint e = lane; e < 32u; e += SUBGROUP) {  // columns 8 (e % 2) to 8 (e % 2) + 7 of row e / 2, one uvec4
          const uint row = e / 2u, col = (e % 2u) * 8u, at = gemm_c_base() + (gm + row) * pc.N + gn + col;
          vec4 lo = uintBitsToFloat(tiles[sg * 64u + row * 4u + col / 4u]), hi = uintBitsToFloat(tiles[sg * 64u + row * 4u + col / 4u + 1u]);
          if (pc.beta != 0.0) {
            const uvec4 old = c4[at >> 3];
            lo += pc.beta * oa_half_quad(old.xy, C_DT);
            hi += pc.beta * oa_half_quad(old.zw, C_DT);
          }
          if (pc.has_bias != 0u) {
            lo += OA_GEMM_BIAS_QUAD(gm + row, gn + col);
            hi += OA_GEMM_BIAS_QUAD(gm + row, gn + col + 4u);
          }
          c4[at >> 3] = uvec4(c_word(lo.xy), c_word(lo.zw), c_word(hi.xy), c_word(hi.zw));
        }
      } else {
        for (uint e = lane; e < 128u; e += SUBGROUP) {  // columns 2 (e % 8) and 2 (e % 8) + 1 of row e / 8
          const uint m = gm + e / 8u, n = gn + (e % 8u) * 2u, at = gemm_c_base() + m * pc.N + n;
          if (m >= pc.M || n >= pc.N) continue;
          const uvec4 q = tiles[sg * 64u + e / 2u];
          vec2 v = uintBitsToFloat((e & 1u) == 0u ? q.xy : q.zw);
          if ((at & 1u) != 0u || n + 1u == pc.N) {  // the pair straddles two words: element by element
            store_c1(at, OA_GEMM_BIAS_INDEX(m, n), v.x);
            if (n + 1u < pc.N) store_c1(at + 1u, OA_GEMM_BIAS_INDEX(m, n + 1u), v.y);
            continue;
          }
          if (pc.beta != 0.0) v += pc.beta * oa_word_values(c1[at >> 1], C_DT);
          if (pc.has_bias != 0u) v += OA_GEMM_BIAS_PAIR(m, n);
          c1[at >> 1] = c_word(v);
        }
      }
      subgroupBarrier();
    }
  }
}

#endif
