#version 450
// Cooperative reduction of row segments. Input rows of length L are cut into
// P = ceil(L / chunk) segments (segment s = row * P + part covers items
// [part * chunk, min(L, (part + 1) * chunk)) of its row); segments tile the
// input contiguously. T invocations reduce one segment (256 / T segments per
// workgroup): each folds a strided share of at most chunk / T items, then the
// T partial results are combined (common/reduce.glsl, which gives the NaN rule).
//
// OP 0: sum (times `scale` on output, e.g. 1/L for a mean); 1: max, NaN
// propagating; 3: min, NaN propagating; 4: product; 2: argmax, the first
// index of the maximum (NaN counts as the maximum), carried as (value, index)
// pairs between passes. NEGATE: the first pass reads -x, so that argmax gives
// argmin (the first index of the minimum; a NaN still counts as the extreme).
// OP 6 to 9 and 11 take int32 items and give int32 results, exactly: 6 sum
// (wrapping past the int32 range; scale unused), 7 max, 8 min, 9 argmax (first
// index, as 2; NEGATE reads ~x = -x - 1, which reverses the int32 order
// without overflow), 11 product (wrapping modulo 2^32, as int32
// multiplication). BYTES: the first pass reads bytes (a bool x), each nonzero
// byte as 1 and zero as 0 (6 counts, 7 is any, 8 and 11 are all).
// SQRT: the final values are square roots (of scale * sum: std, 2-norm).
// IN_PAIRS: the input holds (value bits, index) pairs from an earlier argmax
// pass. OUT_MODE 0: values; 1: (value bits, index) pairs; 2: int32 indices.
// Push: nseg segments in this dispatch starting at global segment s0 =
// r0 * P + p0; the input binding starts at item (r0, p0 * chunk) plus in_off
// items (words, or bytes with BYTES); the output binding at segment s0 plus
// out_off words.
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
layout(constant_id = 6) const bool BYTES = false;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
#include "matrix/reduce.push.h"

const uint G = 256u / T;
const uint ISUM = 6u, IMAX = 7u, IMIN = 8u, IARGMAX = 9u, IPROD = 11u;
const bool INTS = OP >= ISUM;

// Folds the int32 (w, j) into the running (v, i) under OP (the index only
// matters for IARGMAX: a larger value, or an equal one at a lower index, wins).
void icombine(inout int v, inout uint i, int w, uint j) {
  if (OP == ISUM) {
    v += w;
  } else if (OP == IMAX) {
    v = max(v, w);
  } else if (OP == IMIN) {
    v = min(v, w);
  } else if (OP == IPROD) {
    v *= w;
  } else if (w > v || (w == v && j < i)) {
    v = w;
    i = j;
  }
}

shared uint ireduce_index[256];

// The int32 reduction over the T invocations of a segment, as
// oa_segment_reduce combines floats (subgroup butterfly, then the subgroups'
// results in shared memory, in index order).
void segment_ireduce(inout int v, inout uint i) {
  const uint top = min(T, gl_SubgroupSize);
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint m = 1u << b;
    if (m >= top) break;
    const int w = subgroupShuffleXor(v, m);
    const uint j = OP == IARGMAX ? subgroupShuffleXor(i, m) : 0u;
    icombine(v, i, w, j);
  }
  if (T <= gl_SubgroupSize) return;
  const uint t = gl_LocalInvocationIndex, first = t - t % T;
  oa_reduce_index[t] = uint(v);
  if (OP == IARGMAX) ireduce_index[t] = i;
  barrier();
  v = int(oa_reduce_index[first]);
  if (OP == IARGMAX) i = ireduce_index[first];
  for (uint k = gl_SubgroupSize; k < T; k += gl_SubgroupSize)
    icombine(v, i, int(oa_reduce_index[first + k]), OP == IARGMAX ? ireduce_index[first + k] : 0u);
  barrier();
}

// Item p of the binding as an int32: word p, or with BYTES byte p as 0 or 1.
int int_item(uint p) { return BYTES ? int(((x[p >> 2u] >> (8u * (p & 3u))) & 0xffu) != 0u) : int(x[p]); }

void main() {
  const uint tid = gl_LocalInvocationID.x, lane = tid % T;
  const uint seg = OA_GROUP_ID.x * G + tid / T;
  float acc = OP == OA_SUM ? 0.0 : OP == OA_PROD ? 1.0 : OP == OA_MIN ? OA_INF : -OA_INF;
  int iacc = OP == IMAX || OP == IARGMAX ? -2147483647 - 1 : OP == IMIN ? 2147483647 : OP == IPROD ? 1 : 0;
  uint at = 0xffffffffu;
  if (seg < pc.nseg) {
    const uint s = pc.r0 * pc.P + pc.p0 + seg, row = s / pc.P, part = s % pc.P;
    const uint start = pc.in_off + ((row - pc.r0) * pc.L + (part - pc.p0) * pc.chunk) * (IN_PAIRS ? 2u : 1u);
    const uint len = min(pc.chunk, pc.L - part * pc.chunk);
    for (uint j = lane; j < len; j += T) {
      if (INTS) {
        if (IN_PAIRS) icombine(iacc, at, int(x[start + 2u * j]), x[start + 2u * j + 1u]);
        else icombine(iacc, at, NEGATE ? ~int_item(start + j) : int_item(start + j), part * pc.chunk + j);
      } else {
        if (IN_PAIRS) oa_combine(OP, acc, at, uintBitsToFloat(x[start + 2u * j]), x[start + 2u * j + 1u]);
        else oa_combine(OP, acc, at, NEGATE ? -uintBitsToFloat(x[start + j]) : uintBitsToFloat(x[start + j]), part * pc.chunk + j);
      }
    }
  }
  if (INTS) segment_ireduce(iacc, at);  // OP is a specialization constant: uniform control flow
  else oa_segment_reduce(OP, acc, at, 1u, T);
  if (seg < pc.nseg && lane == 0u) {
    const float v = OP == OA_SUM ? acc * pc.scale : acc;
    const uint bits = INTS ? uint(iacc) : OUT_MODE == 0u ? floatBitsToUint(SQRT ? sqrt(v) : v) : floatBitsToUint(acc);
    if (OUT_MODE == 0u) {
      y[pc.out_off + seg] = bits;
    } else if (OUT_MODE == 1u) {
      y[pc.out_off + 2u * seg] = bits;
      y[pc.out_off + 2u * seg + 1u] = at;
    } else {
      y[pc.out_off + seg] = at;
    }
  }
}
