#version 450
// The k largest (LARGEST 1) or smallest entries of each line of x along one
// axis, in order (oa::matrix::topk): x is viewed as [outer, N, inner] and the
// results as [outer, k, inner]. Invocation t takes element t of x and counts
// the elements of its line that come before it; when that rank r is below k,
// it writes its value and its position on the line at position r. "Before"
// is a total order: a NaN before every number when LARGEST (after every
// number otherwise), then the larger (smaller) value, then among equal values
// (or NaNs) the lower position; so ranks are distinct and every output is
// written once. O(N) per element, leaving the line's scan once k elements
// beat it. DT (as matrix/cast): 0 f32, 3 i32 (ordered as integers, no NaN):
// the value written as bits; 1 f16 or 2 bf16: ordered as their exact f32
// widening, values not written (the lowering gathers them at the indices).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint LARGEST = 1;
layout(constant_id = 1) const uint DT = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer V { uint values[]; };
layout(std430, binding = 2) writeonly buffer I { int indices[]; };
#include "matrix/topk.push.h"

bool is_nan(uint bits) { return DT != 3u && (bits & 0x7fffffffu) > 0x7f800000u; }

// Element e of x: its bits (f32, i32) or its f32 widening's bits (f16, bf16).
uint element(uint e) { return DT == 1u || DT == 2u ? floatBitsToUint(oa_half_at(x[e / 2u], e, DT)) : x[e]; }

// Whether (w, m) comes before (v, j) (values as bits).
bool before(uint w, uint m, uint v, uint j) {
  const bool wn = is_nan(w), vn = is_nan(v);
  if (wn != vn) return LARGEST == 1u ? wn : vn;
  if (DT == 3u) {
    if (w != v) return LARGEST == 1u ? int(w) > int(v) : int(w) < int(v);
  } else if (!wn) {
    const float a = uintBitsToFloat(w), b = uintBitsToFloat(v);
    if (a != b) return LARGEST == 1u ? a > b : a < b;
  }
  return m < j;
}

void main() {
  const uint t = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (t >= pc.n) return;
  const uint q = t % pc.inner, j = (t / pc.inner) % pc.extent, o = t / pc.inner / pc.extent;
  const uint base = o * pc.extent * pc.inner + q, v = element(t);
  uint rank = 0u;
  for (uint m = 0u; m < pc.extent; ++m) {
    if (before(element(base + m * pc.inner), m, v, j) && ++rank >= pc.k) return;
  }
  const uint at = (o * pc.k + rank) * pc.inner + q;
  if (DT == 0u || DT == 3u) values[at] = v;
  indices[at] = int(j);
}
