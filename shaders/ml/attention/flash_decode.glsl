// The body of ml/attention/flash_decode (f32 tensors) and, with OA_FLASH_16
// defined, of ml/attention/flash_decode_half (flash_common.glsl).
// Flash attention forward for very few query rows (decoding), flash-decoding
// style: one workgroup per (key range, batch-head, query row) (grid x, y, z),
// each range BLOCK_N keys long. Every invocation works on keys, where the
// tiled forward (flash_forward.comp) would leave all but a few rows' lanes
// idle:
// 1. scores: LANES adjacent invocations own one key at a time (BLOCK_M keys
//    at once); lane l holds vec4 columns l, l + LANES, ... of q in registers,
//    reads the same columns of the key row from memory (neighbouring lanes,
//    neighbouring vec4s) and the lanes add their partial dot products by
//    shuffles; the logit goes to shared memory.
// 2. the range's max m and sum l of p_j = exp2((s_j - m) u) over the
//    workgroup (p_j kept in shared memory), in the numerics of
//    flash_common.glsl;
// 3. p V: invocation t owns vec4 column t % VW of the value rows and every
//    (THREADS / VW)-th key of the range; the slices meet in shared memory in
//    slice order.
// Writes what flash_forward.comp writes with PARTIAL: the unnormalized o of
// row bh * sq + i at row z * part_rows + bh * sq + i of binding 4 and (m, l)
// at the same row of binding 5; flash_combine.comp merges the ranges (also
// when there is one). A range with no visible key writes m = -inf, l = 0.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/oa.glsl"
#include "ml/attention/flash_common.glsl"

FLASH_INPUT(0, Q, q_in, Q4, q4_in)
FLASH_INPUT(1, K, k_in, K4, k4_in)
FLASH_INPUT(2, V, v_in, V4, v4_in)
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer O { float o_out[]; };
layout(std430, binding = 4) writeonly buffer O4 { vec4 o4_out[]; };
layout(std430, binding = 5) writeonly buffer Stats { vec2 stats_out[]; };

// The push block of flash_forward.comp; key_split = BLOCK_N.
#include "ml/attention/flash_forward.push.h"

const uint SLICES = THREADS / VW;  // key slices of the p V pass (the host keeps VW <= THREADS)
shared float p_keys[BLOCK_N];
shared vec4 o_slices[THREADS];
FLASH_READER(read_q, q_in, q4_in)
FLASH_READER(read_k, k_in, k4_in)
FLASH_READER(read_v, v_in, v4_in)
FLASH_WRITER(write_o, o_out, o4_out)

#define DECLARE(i) vec4 q##i = vec4(0.0);
#define LOAD_Q(i) if (uint(i) < KL) q##i = read_q(true, q_at, (uint(i) * LANES + lane) * 4u, pc.dh) * q_sign;
#define DOT_QK(i) if (uint(i) < KL) part += dot(q##i, read_k(true, k_at, (uint(i) * LANES + lane) * 4u, pc.dh));

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint lane = t % LANES;
  const uint bh = OA_GROUP_ID.y, qi = OA_GROUP_ID.z;
  const uint key0 = OA_GROUP_ID.x * BLOCK_N;
  // Keys of this range that the row may see: [key0, key0 + n).
  int last_key = int(pc.sk) - 1;
  if (pc.causal != 0u) last_key = min(last_key, int(qi) + pc.diag);
  const uint n = uint(clamp(last_key + 1 - int(key0), 0, int(BLOCK_N)));

  const uint q_at = flash_row(bh, qi, pc.sq, pc.dh, pc.heads);
  const float q_sign = pc.scale >= 0.0 ? 1.0 : -1.0;
  const float u = flash_exponent_scale(pc.scale);
  const float scale_abs = abs(pc.scale);
  const uint mask_at = MASKED ? flash_mask_row(bh, qi, pc.mask_heads, pc.mask_sb, pc.mask_sh, pc.mask_sq) : 0u;
  FLASH_REGS(DECLARE)
  FLASH_REGS(LOAD_Q)

  // 1. Logits. Every lane of a key group runs the same trip count, so the
  // shuffles of lane_sum see all LANES lanes.
  float m = -OA_INF;
  for (uint j = t / LANES; j < n; j += BLOCK_M) {
    const uint k_at = flash_row(bh, key0 + j, pc.sk, pc.dh, pc.heads);
    float part = 0.0;
    FLASH_REGS(DOT_QK)
    float s = lane_sum(part);
    if (MASKED) s = fma(s, scale_abs, mask[mask_at + key0 + j]);
    if (lane == 0u) p_keys[j] = s;
    m = oa_max(m, s);
  }
  m = oa_segment_max(m, 1u, THREADS);  // synchronises: p_keys is complete

  // 2. Probabilities and their sum.
  float l = 0.0;
  for (uint j = t; j < n; j += THREADS) {
    const float s = p_keys[j];
    const float p = s == -OA_INF ? 0.0 : exp2((s - m) * u);
    p_keys[j] = p;
    l += p;
  }
  l = oa_segment_sum(l, 1u, THREADS);  // synchronises: p_keys holds p

  // 3. p V over this invocation's column and key slice, then the slices in order.
  const uint col = t % VW, slice = t / VW;
  vec4 acc = vec4(0.0);
  if (slice < SLICES)
    for (uint j0 = slice; j0 < n; j0 += 4u * SLICES)
      [[unroll]] for (uint r = 0u; r < 4u; ++r) {  // four loads in flight
        const uint j = j0 + r * SLICES;
        if (j < n) acc += p_keys[j] * read_v(true, flash_row(bh, key0 + j, pc.sk, pc.dv, pc.heads), col * 4u, pc.dv);
      }
  o_slices[t] = acc;
  barrier();
  if (t < VW) {
    for (uint z = 1u; z < SLICES; ++z) acc += o_slices[z * VW + t];
    const uint part_row = OA_GROUP_ID.x * pc.part_rows + bh * pc.sq + qi;
    write_o(part_row * pc.dv, t * 4u, pc.dv, acc);
    if (t == 0u) stats_out[part_row] = vec2(n == 0u ? -OA_INF : m, l);
  }
}
