// Shared by the flash attention kernels (forward, backward dq, backward dk/dv).
//
// Layout: a tensor of `heads` heads per batch entry, S rows and D columns per
// head, stored as packed rows [B*S, heads*D]; head bh = b*heads + h. heads = 1
// is the plain [BH, S, D] layout.
//
// Work split: LANES adjacent invocations own one row (a query row, or a key row
// in the dk/dv pass); lane l holds vec4 columns l, l + LANES, l + 2 LANES, ...
// of that row's head vectors (KL vec4s) and of its value vectors (VL vec4s) in
// registers (interleaved, so that the lanes read neighbouring vec4s of a
// shared-memory row: distinct banks), and a dot product is finished with
// subgroup shuffles between the LANES lanes. Tiles of
// BLOCK_N rows of the other operand go through shared memory as vec4 rows of
// the padded widths DK and DV (zero padded past S and D).
//
// Registers are named vec4 variables (x0 .. x15), not arrays: NVIDIA's
// compiler keeps arrays sized by specialization constants in local memory.
// FLASH_REGS(M) expands M(0) .. M(15); each use guards with `i < KL` (or VL),
// which specialization folds away, so at most 16 vec4s per lane per operand:
// the host keeps DK / (4 * LANES) and DV / (4 * LANES) <= 16.
#ifndef OA_FLASH_COMMON_GLSL
#define OA_FLASH_COMMON_GLSL
#include "common/reduce.glsl"
#include "ml/attention/flash_layout.glsl"


// Numerics shared by the three passes (fixed by MASKED, a specialization
// constant, so that each variant carries only its own arithmetic):
// - Without a mask a score is kept raw, s = q.k (the sign of `scale` folded
//   into q or k so that the largest s is the largest logit; also with a
//   mask, which then uses |scale|), the running max m is a raw score too, and
//   a probability is exp2((s - m) u) with u = |scale| log2 e: raw scores and
//   max in the same units (FlashAttention-2), so s - m is never rounded at the
//   magnitude of s and the error is relative to the row's spread. (The form
//   fma(s, u, -m u) would save the multiply only where fma is fused, which
//   Vulkan does not promise; lavapipe rounds the product.)
// - With an additive mask the logit is formed once in f32 as
//   t = fma(s, |scale|, mask) (natural-log units; a huge mask absorbs the
//   score, as PyTorch's f32 logits do) and a probability is exp2((t - m) u)
//   with u = log2 e. t - m <= 0 cannot overflow, so masks down to -FLT_MAX
//   (and their sums with large scores) stay ordinary finite values: a row
//   masked by -FLT_MAX everywhere is uniform, never zero or NaN; only -inf
//   hides a key.
// - The backward needs p = exp(logit - lse) exactly where lse is huge (a row
//   masked by -1e9 everywhere has lse = -1e9 + log Sk, which f32 cannot
//   hold), so the forward saves per row the pair (m, log2 l) (`stats`, m in
//   the units above, l the row sum) and the backward forms
//   exp2((s - m) u - log2 l).
// - NaN in a logit makes the whole row NaN (the running max is NaN by the
//   rule of common/reduce.glsl, so l and o / l are NaN).
layout(constant_id = 5) const bool MASKED = false;

layout(local_size_x_id = 0) in;                   // BLOCK_M * LANES invocations
layout(constant_id = 1) const uint LANES = 2;     // invocations per row: a power of two within a subgroup
layout(constant_id = 2) const uint BLOCK_N = 32;  // rows per shared-memory tile
layout(constant_id = 3) const uint DK = 64;       // padded head dim (multiple of 4 * LANES)
layout(constant_id = 4) const uint DV = 64;       // padded value dim (multiple of 4 * LANES)
const uint THREADS = gl_WorkGroupSize.x;
const uint BLOCK_M = THREADS / LANES;
const uint KW = DK / 4u;     // vec4s per padded head row
const uint VW = DV / 4u;     // vec4s per padded value row
const uint KL = KW / LANES;  // vec4s of a head row per lane
const uint VL = VW / LANES;  // vec4s of a value row per lane

#define FLASH_REGS(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

// Scale factor u of the exponent (s - m) u: log2 e for masked logits
// (natural units), |scale| log2 e for raw scores.
float flash_exponent_scale(float scale) { return MASKED ? OA_LOG2E : abs(scale) * OA_LOG2E; }

// Sum over the LANES invocations that own one row.
float lane_sum(float x) { return oa_subgroup_sum(x, LANES); }

// Tensor inputs (q, k, v, and O and dO in the backward). In the f32 build
// they are float arrays with vec4 views. With OA_FLASH_16 defined (the _half
// builds, OA_FLASH_16 being the id of the constant FLASH_DT: 1 f16, 2 bf16)
// they are 16-bit arrays bound as 32-bit words (common/half_io.glsl):
// element i is half of word i / 2 and four elements from a multiple of 4 are
// one uvec2. Readers widen each element to f32 exactly; everything after the
// read (tiles, arithmetic, results) is the f32 build's.
#ifdef OA_FLASH_16
#include "common/half_io.glsl"
layout(constant_id = OA_FLASH_16) const uint FLASH_DT = 1u;
#define FLASH_INPUT(BINDING, BLOCK, NAME, BLOCK4, NAME4)                   \
  layout(std430, binding = BINDING) readonly buffer BLOCK { uint NAME[]; }; \
  layout(std430, binding = BINDING) readonly buffer BLOCK4 { uvec2 NAME4[]; };
#define FLASH_ELEMENT(SRC, i) oa_half_at(SRC[(i) >> 1], (i), FLASH_DT)
#define FLASH_QUAD(SRC4, q) oa_half_quad(SRC4[q], FLASH_DT)
#else
#define FLASH_INPUT(BINDING, BLOCK, NAME, BLOCK4, NAME4)                    \
  layout(std430, binding = BINDING) readonly buffer BLOCK { float NAME[]; }; \
  layout(std430, binding = BINDING) readonly buffer BLOCK4 { vec4 NAME4[]; };
#define FLASH_ELEMENT(SRC, i) SRC[i]
#define FLASH_QUAD(SRC4, q) SRC4[q]
#endif

// Defines `vec4 NAME(bool ok, uint at, uint c, uint D)`: columns c .. c+3 of
// the row at element offset `at` of input SRC (vec4 view SRC4), zero where
// !ok or past D; one vec4 load when D is a multiple of 4.
#define FLASH_READER(NAME, SRC, SRC4)                          \
  vec4 NAME(bool ok, uint at, uint c, uint D) {                \
    vec4 v = vec4(0.0);                                        \
    if (ok && c < D) {                                         \
      if ((D & 3u) == 0u) {                                    \
        v = FLASH_QUAD(SRC4, (at + c) >> 2);                   \
      } else {                                                 \
        v.x = FLASH_ELEMENT(SRC, at + c);                      \
        if (c + 1u < D) v.y = FLASH_ELEMENT(SRC, at + c + 1u); \
        if (c + 2u < D) v.z = FLASH_ELEMENT(SRC, at + c + 2u); \
        if (c + 3u < D) v.w = FLASH_ELEMENT(SRC, at + c + 3u); \
      }                                                        \
    }                                                          \
    return v;                                                  \
  }

// Defines `void NAME(uint at, uint c, uint D, vec4 v)`: stores v to columns
// c .. c+3 of the row at element offset `at`, skipping columns past D.
#define FLASH_WRITER(NAME, DST, DST4)                   \
  void NAME(uint at, uint c, uint D, vec4 v) {          \
    if (c >= D) return;                                 \
    if ((D & 3u) == 0u) {                               \
      DST4[(at + c) >> 2] = v;                          \
    } else {                                            \
      DST[at + c] = v.x;                                \
      if (c + 1u < D) DST[at + c + 1u] = v.y;           \
      if (c + 2u < D) DST[at + c + 2u] = v.z;           \
      if (c + 3u < D) DST[at + c + 3u] = v.w;           \
    }                                                   \
  }

// Defines `void NAME(uint bh, uint row0, uint S, uint D, uint heads)`, which
// copies rows row0 .. row0 + BLOCK_N of a tensor into the shared vec4 tile
// TILE of WIDTH vec4s per row through READ (a FLASH_READER), zero padded.
#define FLASH_TILE_LOADER(NAME, TILE, READ, WIDTH)                                      \
  void NAME(uint bh, uint row0, uint S, uint D, uint heads) {                          \
    for (uint idx = gl_LocalInvocationID.x; idx < BLOCK_N * WIDTH; idx += THREADS) {   \
      const uint r = idx / WIDTH;                                                       \
      const bool ok = row0 + r < S;                                                     \
      TILE[idx] = READ(ok, ok ? flash_row(bh, row0 + r, S, D, heads) : 0u, (idx - r * WIDTH) * 4u, D); \
    }                                                                                   \
  }

#endif
