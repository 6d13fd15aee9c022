// Skinny batched GEMM for few rows (M = MR <= 16): C_b = alpha * op(A_b) * op(B_b)
// + beta * C_b (+ bias[n]), row-major, for batch item b = OA_GROUP_ID.z / splits.
// Same push constants, split-K workspace layout and VEC_* meaning as matrix/gemm.
//
// The op is bound by reading B once, so a workgroup of 256 invocations computes
// a strip of 128 columns for all MR rows over one K range. Invocation (kl, nt),
// kl < 8, nt < 32, owns columns n0 + 4 nt .. + 3 and the k-quads
// kbeg + 4 (kl + 8 j) .. + 3, and keeps one vec4 accumulator per row (named
// acc<i>: NVIDIA's compiler may put accumulator arrays in local memory).
// B is read coalesced in both layouts: stored [K, N] (TRANS_B false),
// tid = kl * 32 + nt and a subgroup reads 128 contiguous floats of one row;
// stored [N, K], tid = nt * 8 + kl and it reads 32 contiguous floats (a
// 128-byte line) of each of 4 rows.
// The 8 k lanes' partial sums of each output are then added in a fixed order
// (deterministic). Stored [N, K] on subgroups of at least 8 lanes, the k lanes
// of a column quad are 8 consecutive lanes of one subgroup: three shuffle
// steps (lanes 4, 2, 1 apart) each add half of the rows a lane still holds to
// its partner's and keep that half, so that lane kl ends with rows 2 kl and
// 2 kl + 1 summed (14 vec4 shuffles, no shared memory, no barriers).
// Otherwise the partials meet in shared memory, a tree a row.
//
// Split-K: OA_GROUP_ID.z % splits selects [split * kchunk, min(K, (split + 1) * kchunk));
// kchunk is a multiple of 32. With splits > 1 the host points C at the
// workspace (alpha 1, beta 0, no bias) that matrix/gemm_epilogue sums.
//
// The body of matrix/gemm_skinny (f32) and, with OA_GEMM_16 defined, of
// matrix/gemm_skinny_half: A and B f16 or bf16, widened to f32 as loaded, C
// f32 or A's dtype (rounded once, to nearest even), the bias f32 or A's dtype,
// as in matrix/gemm.glsl.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common/oa.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MR = 1;  // rows, 1..16 (= pc.M)
layout(constant_id = 1) const bool TRANS_A = false;
layout(constant_id = 2) const bool TRANS_B = false;
layout(constant_id = 3) const bool VEC_A = false;  // !TRANS_A and A's K, offset, stride multiples of 4
layout(constant_id = 4) const bool VEC_B = false;

const uint THREADS = 256u;
const uint NT = 32u;           // column quads per workgroup
const uint KT = THREADS / NT;  // k lanes

#ifdef OA_GEMM_16
// Dtype codes (common/half_io.glsl) of A and B (1 or 2), C and the bias (0 or A's).
layout(constant_id = 5) const uint IN_DT = 1;
layout(constant_id = 6) const uint C_DT = 0;
layout(constant_id = 7) const uint BIAS_DT = 0;
#endif
#include "matrix/gemm_operands.glsl"

shared vec4 red[THREADS];

// op(A_b)[i, k .. k + 3], zero past kend.
vec4 a_quad(uint i, uint k) {
  if (VEC_A) return k < kend ? OA_A4((abase + i * pc.K + k) >> 2) : vec4(0.0);
  vec4 v;
  [[unroll]] for (uint c = 0u; c < 4u; ++c)
    v[c] = k + c < kend ? OA_A1(TRANS_A ? abase + (k + c) * pc.M + i : abase + i * pc.K + k + c) : 0.0;
  return v;
}

// TRANS_B: B_b[n, k .. k + 3]; otherwise B_b[k, n .. n + 3]. Zero outside the problem.
vec4 b_quad(uint n, uint k) {
  if (TRANS_B) {
    if (n >= pc.N) return vec4(0.0);
    if (VEC_B) return k < kend ? OA_B4((bbase + n * pc.K + k) >> 2) : vec4(0.0);
    vec4 v;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] = k + c < kend ? OA_B1(bbase + n * pc.K + k + c) : 0.0;
    return v;
  }
  if (k >= kend) return vec4(0.0);
  if (VEC_B) return n < pc.N ? OA_B4((bbase + k * pc.N + n) >> 2) : vec4(0.0);
  vec4 v;
  [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] = n + c < pc.N ? OA_B1(bbase + k * pc.N + n + c) : 0.0;
  return v;
}

// Row i of C at columns n .. n + 3 from the summed products s: alpha * s (+ beta * C) (+ bias).
void store_row(uint i, uint n, vec4 s) {
  [[unroll]] for (uint c = 0u; c < 4u; ++c)
    if (n + c < pc.N) store_c1(gemm_c_base() + i * pc.N + n + c, n + c, pc.alpha * s[c]);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint kl = TRANS_B ? tid % KT : tid / NT, nt = TRANS_B ? tid / KT : tid % NT;
  const uvec3 group = OA_GROUP_ID;
  const uint n = group.x * (4u * NT) + 4u * nt;
  const uint kbeg = gemm_split_begin();

  vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
  vec4 acc4 = vec4(0.0), acc5 = vec4(0.0), acc6 = vec4(0.0), acc7 = vec4(0.0);
  vec4 acc8 = vec4(0.0), acc9 = vec4(0.0), acc10 = vec4(0.0), acc11 = vec4(0.0);
  vec4 acc12 = vec4(0.0), acc13 = vec4(0.0), acc14 = vec4(0.0), acc15 = vec4(0.0);

  for (uint k = kbeg + 4u * kl; k < kend; k += 4u * KT) {
    // TRANS_B: b<c> is column n + c over k .. k + 3; otherwise row k + c over n .. n + 3.
    const vec4 b0 = b_quad(n, k);
    const vec4 b1 = TRANS_B ? b_quad(n + 1u, k) : b_quad(n, k + 1u);
    const vec4 b2 = TRANS_B ? b_quad(n + 2u, k) : b_quad(n, k + 2u);
    const vec4 b3 = TRANS_B ? b_quad(n + 3u, k) : b_quad(n, k + 3u);
#define OA_SKINNY_ROW(i)                                                                               \
  if (MR > uint(i)) {                                                                                  \
    const vec4 a = a_quad(uint(i), k);                                                                 \
    if (TRANS_B)                                                                                       \
      acc##i += vec4(dot(a, b0), dot(a, b1), dot(a, b2), dot(a, b3));                                  \
    else                                                                                               \
      acc##i = fma(vec4(a.w), b3, fma(vec4(a.z), b2, fma(vec4(a.y), b1, fma(vec4(a.x), b0, acc##i)))); \
  }
    OA_SKINNY_ROW(0) OA_SKINNY_ROW(1) OA_SKINNY_ROW(2) OA_SKINNY_ROW(3)
    OA_SKINNY_ROW(4) OA_SKINNY_ROW(5) OA_SKINNY_ROW(6) OA_SKINNY_ROW(7)
    OA_SKINNY_ROW(8) OA_SKINNY_ROW(9) OA_SKINNY_ROW(10) OA_SKINNY_ROW(11)
    OA_SKINNY_ROW(12) OA_SKINNY_ROW(13) OA_SKINNY_ROW(14) OA_SKINNY_ROW(15)
#undef OA_SKINNY_ROW
  }

  if (TRANS_B && gl_SubgroupSize >= KT) {
    // Keeps acc<lo> (the lane's half, bit `bit` of kl clear) or acc<hi> (set) in
    // acc<lo>, plus the partner's partial of the same row, `bit` lanes away.
#define OA_SKINNY_HALF(bit, lo, hi)                                   \
  {                                                                   \
    const bool upper = (kl & (bit)) != 0u;                            \
    const vec4 other = subgroupShuffleXor(upper ? acc##lo : acc##hi, bit); \
    acc##lo = (upper ? acc##hi : acc##lo) + other;                    \
  }
    OA_SKINNY_HALF(4u, 0, 8) OA_SKINNY_HALF(4u, 1, 9) OA_SKINNY_HALF(4u, 2, 10) OA_SKINNY_HALF(4u, 3, 11)
    OA_SKINNY_HALF(4u, 4, 12) OA_SKINNY_HALF(4u, 5, 13) OA_SKINNY_HALF(4u, 6, 14) OA_SKINNY_HALF(4u, 7, 15)
    OA_SKINNY_HALF(2u, 0, 4) OA_SKINNY_HALF(2u, 1, 5) OA_SKINNY_HALF(2u, 2, 6) OA_SKINNY_HALF(2u, 3, 7)
    OA_SKINNY_HALF(1u, 0, 2) OA_SKINNY_HALF(1u, 1, 3)
#undef OA_SKINNY_HALF
    // acc0 and acc1 now hold rows 8 b2 + 4 b1 + 2 b0 (+ 1) for kl's bits b2 b1 b0, that is 2 kl (+ 1).
    if (2u * kl < MR) store_row(2u * kl, n, acc0);
    if (2u * kl + 1u < MR) store_row(2u * kl + 1u, n, acc1);
    return;
  }

  // Row i: sum the KT lanes' partials of each column quad (red[kl * NT + nt]) and store.
#define OA_SKINNY_STORE(i)                                                                             \
  if (MR > uint(i)) {                                                                                  \
    barrier();                                                                                         \
    red[kl * NT + nt] = acc##i;                                                                        \
    [[unroll]] for (uint s = KT / 2u; s > 0u; s /= 2u) {                                               \
      barrier();                                                                                       \
      if (kl < s) red[kl * NT + nt] += red[(kl + s) * NT + nt];                                        \
    }                                                                                                  \
    barrier();                                                                                         \
    if (tid < NT) store_row(uint(i), group.x * (4u * NT) + 4u * tid, red[tid]);                 \
  }
  OA_SKINNY_STORE(0) OA_SKINNY_STORE(1) OA_SKINNY_STORE(2) OA_SKINNY_STORE(3)
  OA_SKINNY_STORE(4) OA_SKINNY_STORE(5) OA_SKINNY_STORE(6) OA_SKINNY_STORE(7)
  OA_SKINNY_STORE(8) OA_SKINNY_STORE(9) OA_SKINNY_STORE(10) OA_SKINNY_STORE(11)
  OA_SKINNY_STORE(12) OA_SKINNY_STORE(13) OA_SKINNY_STORE(14) OA_SKINNY_STORE(15)
#undef OA_SKINNY_STORE
}
