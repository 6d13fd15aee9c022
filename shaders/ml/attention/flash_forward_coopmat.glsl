// Flash attention forward on the tensor cores (GL_KHR_cooperative_matrix,
// subgroup scope) for f16 q, k, v (flash_forward_coopmat.comp) or bf16
// (flash_forward_coopmat_bf16.comp: this module compiled for f16, its 16-bit
// float type then rewritten to bf16 by the build, tools/spirv_bf16.cpp, so
// float16_t appears here only as a cooperative-matrix component type).
// The problem, push constants and numerics are those of flash_forward.glsl
// (flash_common.glsl): raw scores s = sign(scale) q.k, base-2 online softmax
// with the running max in the same units, an additive mask forming the logit
// fma(s, |scale|, mask) in f32; NaN in a logit makes its row NaN. The output
// has the inputs' dtype (rounded once); lse and stats are f32 and no key split.
//
// A workgroup of WARPS subgroups owns BLOCK_M = WARPS * 16 * RF query rows of
// one batch-head; subgroup w owns 16 * RF of them: their q as RF x D/16 f16
// A-matrices and their output as RF x D/16 f32 accumulators, in registers.
// Key and value rows stream through shared memory in tiles of BLOCK_N
// (flash_kv_tiles.glsl: stored as read, rows padded by 8 halves). Per tile a subgroup
//  1. multiplies S = q k^T into f32 accumulators (k's tile read column-major
//     is k^T) and stores them to its own shared scratch;
//  2. turns S into probabilities with its lanes, LPR lanes per row (each lane
//     a pair of adjacent columns at a time): the row's running max m moves
//     to m' = max(m, max_j s_j), alpha = exp2((m - m') u), l = alpha l +
//     sum_j exp2((s_j - m') u); P (rounded to the inputs' dtype, as the
//     tensor cores take it) goes to shared memory, alpha to row_scale;
//  3. scales its output accumulators by their rows' alpha (multiplied
//     elementwise by an accumulator loaded from a 16 x 16 matrix whose rows
//     hold their alpha: an accumulator's element-to-row mapping is the
//     implementation's) and adds P v.
// The next tile's k and v rows are read into registers while a tile is
// multiplied. Tiles past every row's causal diagonal are not loaded; a
// subgroup skips the tiles above its own rows' diagonal. Finally each row's
// output is scaled by 1 / l, staged 16 x 16 at a time through the scratch and
// stored as uvec4s of 8 halves; lse and stats as flash_forward.glsl's unsplit rows.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
#include "common/reduce.glsl"
#include "ml/attention/flash_layout.glsl"

layout(local_size_x_id = 0) in;                    // WARPS * SUBGROUP invocations
layout(constant_id = 1) const uint D = 64;         // head dim = value dim, a multiple of 16
layout(constant_id = 2) const uint BLOCK_N = 32;   // key rows per shared tile, a multiple of 16
layout(constant_id = 3) const bool MASKED = false;
layout(constant_id = 4) const uint DT = 1u;        // 1 f16, 2 bf16 (common/half_io.glsl)
layout(constant_id = 5) const uint SUBGROUP = 32;  // the device's subgroup size: at least 16 * RF
layout(constant_id = 6) const uint RF = 1;         // 16-row fragments per subgroup: 1 or 2

layout(std430, binding = 0) readonly buffer Q4 { uvec4 q4_in[]; };
layout(std430, binding = 1) readonly buffer K4 { uvec4 k4_in[]; };
layout(std430, binding = 2) readonly buffer V4 { uvec4 v4_in[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer O4 { uvec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 6) writeonly buffer Stats { vec2 stats_out[]; };

#include "ml/attention/flash_forward.push.h"

const uint THREADS = gl_WorkGroupSize.x;
const uint WARPS = THREADS / SUBGROUP;
const uint WROWS = 16u * RF;              // query rows per subgroup
const uint BLOCK_M = WARPS * WROWS;
const uint LPR = SUBGROUP / WROWS;        // lanes per row in the softmax step
const uint PAIRS = BLOCK_N / (2u * LPR);  // column pairs per lane per tile
const uint DF = D / 16u;                  // 16-column fragments of a row
const uint NF = BLOCK_N / 16u;            // 16-key fragments of a tile
const uint KV_ROWS = BLOCK_N;
#include "ml/attention/flash_kv_tiles.glsl"
const uint SLD = BLOCK_N + 4u;            // floats per scratch row (at least 16)
const uint PLD = BLOCK_N + 8u;            // halves per probability row

// Before the key loop, kv_tiles holds QCHUNK of the block's q rows at a time.
const uint QCHUNK = 2u * BLOCK_N;
shared float scratch[WARPS * WROWS * SLD];
shared uvec4 p_tiles[WARPS * WROWS * PLD / 8u];

#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> qf[RF * DF];
ACC of[RF * DF];

// Copies rows row0 .. row0 + n of a [S, D] head (16-bit, as uvec4s of 8
// halves) into kv_tiles from uvec4 `dst` on, LD halves a row, zeros past S.
#define COPY_ROWS(SRC4, dst, row0, n, S)                                           \
  for (uint idx = gl_LocalInvocationID.x; idx < (n) * (D / 8u); idx += THREADS) { \
    const uint r = idx / (D / 8u), c = idx - r * (D / 8u);                         \
    const uint row = (row0) + r;                                                   \
    kv_tiles[(dst) + r * (LD / 8u) + c] =                                          \
        row < (S) ? SRC4[(flash_row(bh, row, (S), D, pc.heads) >> 3) + c] : uvec4(0u); \
  }

void subgroup_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// Two probabilities (in [0, 1], or NaN) as 16-bit elements of one word,
// rounded to nearest even: f16 by the hardware's conversion, bf16 by adding
// 0x7fff plus the kept lowest bit (which leaves a quiet NaN a NaN).
uint pack_probabilities(vec2 p) {
  if (DT == 1u) return packHalf2x16(p);
  const uvec2 x = floatBitsToUint(p);
  const uvec2 b = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return b.x | (b.y << 16);
}

// Multiplies every row of subgroup w's output accumulators by x, this lane's
// row's value (its lanes agree): through 16 x 16 matrices of rows of x in the
// scratch, which must be free.
void scale_rows(uint w, uint r, uint h, float x) {
  for (uint col = h; col < 16u; col += LPR) scratch[(w * WROWS + r) * SLD + col] = x;
  subgroup_sync();
  [[unroll]] for (uint i = 0u; i < RF; ++i) {
    ACC rows;
    coopMatLoad(rows, scratch, (w * WROWS + i * 16u) * SLD, SLD, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint c = 0u; c < DF; ++c) of[i * DF + c] = of[i * DF + c] * rows;
  }
  subgroup_sync();
}

// The logits of columns c, c + 1 of row r of subgroup w's scores (keys key0
// + c, + 1): the raw score times sign(scale), or with a mask the masked logit;
// -inf where the key is hidden (causal, past Sk, or a dead row).
vec2 logits(uint w, uint r, uint key0, uint c, uint mask_at, bool live, int last_key, float q_sign, float scale_abs) {
  const uint at = (w * WROWS + r) * SLD + c;
  vec2 s = vec2(scratch[at], scratch[at + 1u]) * q_sign;
  [[unroll]] for (uint e = 0u; e < 2u; ++e) {
    const int key = int(key0 + c + e);
    const bool visible = live && key <= last_key;
    if (MASKED && visible) s[e] = fma(s[e], scale_abs, mask[mask_at + uint(key)]);
    s[e] = visible ? s[e] : -OA_INF;
  }
  return s;
}

void main() {
  const uint w = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint bh = OA_GROUP_ID.y;
  const uint row0 = OA_GROUP_ID.x * BLOCK_M;
  const uint wrow0 = row0 + w * WROWS;
  const int diag = pc.diag;
  const float q_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float scale_abs = abs(pc.scale);
  const float u = MASKED ? OA_LOG2E : scale_abs * OA_LOG2E;

  // This lane's row in the softmax step and its first column pair.
  const uint r = lane / LPR, h = lane % LPR;
  const uint qi = wrow0 + r;
  const bool live = qi < pc.sq;
  const uint mask_at = MASKED && live ? flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;

  // The block's q rows, QCHUNK at a time through kv_tiles.
  [[unroll]] for (uint f = 0u; f < RF * DF; ++f) of[f] = ACC(0.0);
  for (uint q0 = 0u; q0 < BLOCK_M; q0 += QCHUNK) {
    barrier();
    COPY_ROWS(q4_in, 0u, row0 + q0, min(QCHUNK, BLOCK_M - q0), pc.sq)
    barrier();
    [[unroll]] for (uint i = 0u; i < RF; ++i) {
      const uint fr = w * WROWS + i * 16u;  // the fragment's first row in the block
      if (fr >= q0 && fr < q0 + QCHUNK)
        [[unroll]] for (uint c = 0u; c < DF; ++c)
          coopMatLoad(qf[i * DF + c], kv_tiles, ((fr - q0) * LD + c * 16u) / 8u, LD / 8u, gl_CooperativeMatrixLayoutRowMajor);
    }
  }

  // Keys [0, key_end) are visible to some row of the block; this lane's row
  // sees keys up to last_key, this subgroup's rows up to warp_last.
  uint key_end = pc.sk;
  int last_key = int(pc.sk) - 1, warp_last = last_key;
  if (pc.causal != 0u) {
    key_end = uint(clamp(int(min(row0 + BLOCK_M, pc.sq)) + diag, 0, int(pc.sk)));
    last_key = min(last_key, int(qi) + diag);
    warp_last = min(warp_last, int(min(wrow0 + WROWS, pc.sq)) - 1 + diag);
  }
  const bool warp_live = wrow0 < pc.sq;

  float m = -OA_INF, l = 0.0;
  if (key_end > 0u) load_kv(bh, 0u);
  for (uint key0 = 0u; key0 < key_end; key0 += BLOCK_N) {
    barrier();
    store_kv();
    barrier();
    if (key0 + BLOCK_N < key_end) load_kv(bh, key0 + BLOCK_N);
    if (!warp_live || int(key0) > warp_last) continue;

    // 1. S = q k^T, into the scratch.
    [[unroll]] for (uint i = 0u; i < RF; ++i)
      [[unroll]] for (uint j = 0u; j < NF; ++j) {
        ACC s = ACC(0.0);
        [[unroll]] for (uint c = 0u; c < DF; ++c) {
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> kf;
          coopMatLoad(kf, kv_tiles, (j * 16u * LD + c * 16u) / 8u, LD / 8u, gl_CooperativeMatrixLayoutColumnMajor);
          s = coopMatMulAdd(qf[i * DF + c], kf, s);
        }
        coopMatStore(s, scratch, (w * WROWS + i * 16u) * SLD + j * 16u, SLD, gl_CooperativeMatrixLayoutRowMajor);
      }
    subgroup_sync();

    // 2. Probabilities of this lane's row: column pairs 2 (k LPR + h), k < PAIRS
    // (their logits read twice, for the max and then for the exponentials).
    float tile_max = -OA_INF;
    [[unroll]] for (uint k = 0u; k < PAIRS; ++k) {
      const vec2 s = logits(w, r, key0, 2u * (k * LPR + h), mask_at, live, last_key, q_sign, scale_abs);
      tile_max = oa_max(tile_max, oa_max(s.x, s.y));
    }
    [[unroll]] for (uint x = 1u; x < LPR; x *= 2u) tile_max = oa_max(tile_max, subgroupShuffleXor(tile_max, x));
    // o and l are 0 until a key is visible.
    const float m_new = oa_max(m, tile_max);
    const float alpha = m == -OA_INF ? 0.0 : exp2((m - m_new) * u);
    l *= alpha;
    m = m_new;
    [[unroll]] for (uint k = 0u; k < PAIRS; ++k) {
      const uint c = 2u * (k * LPR + h);
      const vec2 s = logits(w, r, key0, c, mask_at, live, last_key, q_sign, scale_abs);
      const float p0 = s.x == -OA_INF ? 0.0 : exp2((s.x - m) * u);
      const float p1 = s.y == -OA_INF ? 0.0 : exp2((s.y - m) * u);
      l += p0 + p1;
      const uint at = (w * WROWS + r) * PLD + c;  // in halves; c is even
      p_tiles[at >> 3][(at >> 1) & 3u] = pack_probabilities(vec2(p0, p1));
    }
    subgroup_sync();

    // 3. o = alpha o + P v.
    scale_rows(w, r, h, alpha);
    [[unroll]] for (uint i = 0u; i < RF; ++i)
      [[unroll]] for (uint j = 0u; j < NF; ++j) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> pf;
        coopMatLoad(pf, p_tiles, ((w * WROWS + i * 16u) * PLD + j * 16u) / 8u, PLD / 8u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint c = 0u; c < DF; ++c) {
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> vf;
          coopMatLoad(vf, kv_tiles, TILE_WORDS + (j * 16u * LD + c * 16u) / 8u, LD / 8u, gl_CooperativeMatrixLayoutRowMajor);
          of[i * DF + c] = coopMatMulAdd(pf, vf, of[i * DF + c]);
        }
      }
  }
  if (!warp_live) return;

  // The row sum over its lanes; L == 0: nothing visible (zeros, lse = -inf);
  // a NaN L (a NaN logit) makes the whole row NaN.
  float L = l;
  [[unroll]] for (uint x = 1u; x < LPR; x *= 2u) L += subgroupShuffleXor(L, x);
  if (h == 0u && live) {
    const float log2_l = L == 0.0 ? -OA_INF : log2(L);
    lse_out[bh * pc.sq + qi] = L == 0.0 ? -OA_INF : fma(m, MASKED ? 1.0 : scale_abs, log2_l * OA_LN2);
    stats_out[bh * pc.sq + qi] = vec2(L == 0.0 ? -OA_INF : m, log2_l);
  }
  subgroup_sync();
  scale_rows(w, r, h, L == 0.0 ? 0.0 : 1.0 / L);

  // The output, one 16 x 16 fragment at a time: staged in the scratch as f32,
  // then each row's 16 columns stored by its lanes as uvec4s of 8 halves.
  [[unroll]] for (uint i = 0u; i < RF; ++i)
    [[unroll]] for (uint c = 0u; c < DF; ++c) {
      subgroup_sync();
      coopMatStore(of[i * DF + c], scratch, w * WROWS * SLD, SLD, gl_CooperativeMatrixLayoutRowMajor);
      subgroup_sync();
      for (uint t = lane; t < 32u; t += SUBGROUP) {  // 16 rows x 2 halves of 8 columns
        const uint fr = t / 2u, col = (t % 2u) * 8u, row = wrow0 + i * 16u + fr;
        if (row >= pc.sq) continue;
        const uint at = w * WROWS * SLD + fr * SLD + col;
        uvec4 words;
        [[unroll]] for (uint e = 0u; e < 4u; ++e)
          words[e] = oa_word_of(vec2(scratch[at + 2u * e], scratch[at + 2u * e + 1u]), true, DT);
        o4_out[(flash_row(bh, row, pc.sq, D, pc.heads) + c * 16u + col) >> 3] = words;
      }
    }
}
