#version 450
// Cooperative reduction of row segments. Input rows of length L are cut into
// P = ceil(L / chunk) segments (segment s = row * P + part covers items
// [part * chunk, min(L, (part + 1) * chunk)) of its row); segments tile the
// input contiguously. T invocations reduce one segment (256 / T segments per
// workgroup): each folds a strided share of at most chunk / T items, then the
// T partial results are combined (common/reduce.glsl, which gives the NaN rule).
//
// OP 0: sum (times `scale` on output, e.g. 1/L for a mean); 1: max, NaN
// propagating; 3: min, NaN propagating; 4: product; 6: int32 sum (int32
// items and results, exact, wrapping past the int32 range; scale unused); 2: argmax, the first index of the maximum (NaN counts as the
// maximum), carried as (value, index) pairs between passes. NEGATE: the
// first pass reads -x, so that argmax gives argmin (the first index of the
// minimum; a NaN still counts as the extreme).
// SQRT: the final values are square roots (of scale * sum: std, 2-norm).
// IN_PAIRS: the input holds (value bits, index) pairs from an earlier argmax
// pass. OUT_MODE 0: values; 1: (value bits, index) pairs; 2: int32 indices.
// Push: nseg segments in this dispatch starting at global segment s0 =
// r0 * P + p0; the input binding starts at item (r0, p0 * chunk) plus in_off
// words; the output binding at segment s0 plus out_off words.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint T = 256;
layout(constant_id = 2) const bool IN_PAIRS = false;
layout(constant_id = 3) const uint OUT_MODE = 0;
layout(constant_id = 4) const bool NEGATE = false;
layout(constant_id = 5) const bool SQRT = false;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
#include "matrix/reduce.push.h"

const uint G = 256u / T;
const uint ISUM = 6u;

// The int32 sum over the T invocations of a segment, as oa_segment_reduce
// combines them (subgroup butterfly, then the subgroups' sums in shared
// memory); integer addition, so any order gives the same result.
int segment_isum(int v) {
  const uint top = min(T, gl_SubgroupSize);
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint m = 1u << b;
    if (m >= top) break;
    v += subgroupShuffleXor(v, m);
  }
  if (T <= gl_SubgroupSize) return v;
  const uint t = gl_LocalInvocationIndex, first = t - t % T;
  oa_reduce_index[t] = uint(v);
  barrier();
  v = 0;
  for (uint k = 0u; k < T; k += gl_SubgroupSize) v += int(oa_reduce_index[first + k]);
  barrier();
  return v;
}

void main() {
  const uint tid = gl_LocalInvocationID.x, lane = tid % T;
  const uint seg = OA_GROUP_ID.x * G + tid / T;
  if (OP == ISUM) {  // a specialization constant: uniform control flow
    int total = 0;
    if (seg < pc.nseg) {
      const uint s = pc.r0 * pc.P + pc.p0 + seg, row = s / pc.P, part = s % pc.P;
      const uint start = pc.in_off + (row - pc.r0) * pc.L + (part - pc.p0) * pc.chunk;
      const uint len = min(pc.chunk, pc.L - part * pc.chunk);
      for (uint j = lane; j < len; j += T) total += int(x[start + j]);
    }
    total = segment_isum(total);
    if (seg < pc.nseg && lane == 0u) y[pc.out_off + seg] = uint(total);
    return;
  }
  float acc = OP == OA_SUM ? 0.0 : OP == OA_PROD ? 1.0 : OP == OA_MIN ? OA_INF : -OA_INF;
  uint at = 0xffffffffu;
  if (seg < pc.nseg) {
    const uint s = pc.r0 * pc.P + pc.p0 + seg, row = s / pc.P, part = s % pc.P;
    const uint start = pc.in_off + ((row - pc.r0) * pc.L + (part - pc.p0) * pc.chunk) * (IN_PAIRS ? 2u : 1u);
    const uint len = min(pc.chunk, pc.L - part * pc.chunk);
    for (uint j = lane; j < len; j += T) {
      if (IN_PAIRS) oa_combine(OP, acc, at, uintBitsToFloat(x[start + 2u * j]), x[start + 2u * j + 1u]);
      else oa_combine(OP, acc, at, NEGATE ? -uintBitsToFloat(x[start + j]) : uintBitsToFloat(x[start + j]), part * pc.chunk + j);
    }
  }
  oa_segment_reduce(OP, acc, at, 1u, T);
  if (seg < pc.nseg && lane == 0u) {
    if (OUT_MODE == 0u) {
      const float v = OP == OA_SUM ? acc * pc.scale : acc;
      y[pc.out_off + seg] = floatBitsToUint(SQRT ? sqrt(v) : v);
    } else if (OUT_MODE == 1u) {
      y[pc.out_off + 2u * seg] = floatBitsToUint(acc);
      y[pc.out_off + 2u * seg + 1u] = at;
    } else {
      y[pc.out_off + seg] = at;
    }
  }
}
