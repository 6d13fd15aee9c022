#version 450
// One f32 operand X of an f32 GEMM split for the tensor cores
// (Engine::set_float32_matmul_precision(High)): per line (a row of op(A), a
// column of op(B)) the exponent t of matrix/gemm_split.glsl, and
// hi = f16(x 2^t), lo = f16((x 2^t - hi) 2^11) (common/half.glsl: to nearest,
// ties to even), so x 2^t = hi + lo 2^-11 to about 22 bits. A line holding inf
// or NaN gets exponent OA_SPLIT_NONFINITE and zero parts (the epilogue takes
// an FP32 dot product there). The parts have X's layout with lines and K
// padded to lines_p and len_p (multiples of 8, zeros): [lines_p, len_p] when
// CONTIGUOUS (a line's elements are consecutive in X: rows of A [M, K], of B
// stored [N, K]), else [len_p, lines_p] (columns of A stored [K, M], of B
// [K, N]). Workgroup (x, item y): CONTIGUOUS, 4 lines of 64 invocations, each
// a word (2 elements) of its line at a time; else 64 lines (32 word columns)
// of 8 invocations, each a word of 2 lines at a time. One pass over X for the
// line's largest magnitude, a second for the parts (whole words, no atomics).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half.glsl"
#include "matrix/gemm_split.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint CONTIGUOUS = 1;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Hi { uint hi[]; };
layout(std430, binding = 2) writeonly buffer Lo { uint lo[]; };
layout(std430, binding = 3) writeonly buffer Scale { int scale[]; };
#include "matrix/gemm_split.push.h"

const uint LANES = CONTIGUOUS != 0u ? 64u : 8u;        // invocations along a line
const uint LANE_STRIDE = CONTIGUOUS != 0u ? 1u : 32u;  // between a line's invocations
shared uint top[512];  // the largest |x| bits so far of each invocation's (first, second) line

// X's element j of line `line` (0 in the padding).
float at(uint base, uint line, uint j) {
  if (line >= pc.lines || j >= pc.len) return 0.0;
  return x[base + (CONTIGUOUS != 0u ? line * pc.len + j : j * pc.lines + line)];
}

// The f16 parts (hi, lo) of x scaled by 2^t, in the low half of each.
uvec2 split(float v, int t) {
  if (t == OA_SPLIT_NONFINITE) return uvec2(0u);
  const float y = oa_scale_pow2(v, t);
  const uint h = oa_f16_from_f32(floatBitsToUint(y));
  const float r = (y - uintBitsToFloat(oa_f32_from_f16(h))) * 2048.0;
  return uvec2(h, oa_f16_from_f32(floatBitsToUint(r)));
}

void main() {
  const uint tid = gl_LocalInvocationID.x, item = OA_GROUP_ID.y;
  const uint lane = CONTIGUOUS != 0u ? tid % 64u : tid / 32u;
  // CONTIGUOUS: element pairs (2w, 2w + 1) of `line`; else elements j of lines `line` and `line` + 1.
  const uint line = CONTIGUOUS != 0u ? OA_GROUP_ID.x * 4u + tid / 64u : OA_GROUP_ID.x * 64u + 2u * (tid % 32u);
  const uint base = pc.x_off + item * pc.x_stride;
  const uint steps = CONTIGUOUS != 0u ? pc.len_p / 2u : pc.len_p;
  uvec2 m = uvec2(0u);
  for (uint s = lane; s < steps; s += LANES) {
    const vec2 v = CONTIGUOUS != 0u ? vec2(at(base, line, 2u * s), at(base, line, 2u * s + 1u))
                                    : vec2(at(base, line, s), at(base, line + 1u, s));
    const uvec2 bits = floatBitsToUint(abs(v));
    if (CONTIGUOUS != 0u) m.x = max(m.x, max(bits.x, bits.y));
    else m = max(m, bits);
  }
  top[tid] = m.x;
  top[256u + tid] = m.y;
  barrier();
  for (uint width = LANES / 2u; width > 0u; width /= 2u) {
    if (lane < width) {
      top[tid] = max(top[tid], top[tid + width * LANE_STRIDE]);
      top[256u + tid] = max(top[256u + tid], top[256u + tid + width * LANE_STRIDE]);
    }
    barrier();
  }
  const uint lead = tid - lane * LANE_STRIDE;  // the line's first invocation
  const ivec2 t = ivec2(oa_split_exponent(top[lead]), oa_split_exponent(top[256u + lead]));
  if (line >= pc.lines_p) return;
  if (lane == 0u) {
    scale[pc.scale_off + item * pc.lines_p + line] = t.x;
    if (CONTIGUOUS == 0u) scale[pc.scale_off + item * pc.lines_p + line + 1u] = t.y;
  }
  const uint first_word = item * pc.part_stride;
  for (uint s = lane; s < steps; s += LANES) {
    uvec2 p0, p1;
    uint word;
    if (CONTIGUOUS != 0u) {
      p0 = split(at(base, line, 2u * s), t.x);
      p1 = split(at(base, line, 2u * s + 1u), t.x);
      word = first_word + line * (pc.len_p / 2u) + s;
    } else {
      p0 = split(at(base, line, s), t.x);
      p1 = split(at(base, line + 1u, s), t.y);
      word = first_word + s * (pc.lines_p / 2u) + line / 2u;
    }
    hi[pc.hi_off + word] = p0.x | (p1.x << 16);
    lo[pc.lo_off + word] = p0.y | (p1.y << 16);
  }
}
