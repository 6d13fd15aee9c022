// Workgroup and subgroup reductions shared by every oa kernel that combines
// values across invocations: sum, max, arg-max, min and product.
//
// NaN rule (every max, min and arg-max, as torch.amax / torch.amin /
// torch.argmax): a NaN is the maximum (and the minimum). oa_max(a, b) is NaN when either is NaN (GLSL's max(x, NaN) is
// undefined, so kernels never use it on data that may hold NaN); an arg-max
// returns the first index of a NaN when there is one, otherwise the first
// index of the largest value. -inf is the identity of max.
//
// Segments: a reduction combines the `count` invocations of a segment, whose
// local invocation indices are first + k * stride (k < count) inside an
// aligned block of stride * count invocations; stride and count are powers of
// two and stride * count divides the workgroup size (at most 256). Every
// invocation of the segment gets the result. The invocations of a segment
// that share a subgroup combine by subgroup shuffles (a butterfly, so every
// lane computes the same value); when a segment spans several subgroups, the
// subgroups' results meet in shared memory and each invocation folds them in
// index order. Results are deterministic for a given device and subgroup
// size. Like the flash kernels, this relies on subgroups being consecutive
// local invocation indices (gl_SubgroupInvocationID = index % gl_SubgroupSize).
//
// oa_segment_* synchronise the workgroup when a segment spans subgroups: call
// them from uniform control flow, every invocation of the workgroup.
// oa_subgroup_* never synchronise; their segment must lie in one subgroup.
#ifndef OA_REDUCE_GLSL
#define OA_REDUCE_GLSL
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require

const uint OA_SUM = 0u, OA_MAX = 1u, OA_ARGMAX = 2u, OA_MIN = 3u, OA_PROD = 4u;

// max(a, b) with NaN propagating.
float oa_max(float a, float b) { return a > b || isnan(a) ? a : b; }
// min(a, b) with NaN propagating.
float oa_min(float a, float b) { return a < b || isnan(a) ? a : b; }

// True when (v, i) should replace (w, j) as the arg-maximum: a NaN beats a
// number, a larger value a smaller one, and among equals (or NaNs) the lower index.
bool oa_argmax_beats(float v, uint i, float w, uint j) {
  const bool vn = isnan(v), wn = isnan(w);
  if (vn != wn) return vn;
  if (!vn && v != w) return v > w;
  return i < j;
}

// Folds (w, j) into the running (v, i) under `op` (OA_SUM, OA_MAX, OA_ARGMAX,
// OA_MIN, OA_PROD; the index only matters for OA_ARGMAX).
void oa_combine(uint op, inout float v, inout uint i, float w, uint j) {
  if (op == OA_SUM) {
    v += w;
  } else if (op == OA_MAX) {
    v = oa_max(v, w);
  } else if (op == OA_MIN) {
    v = oa_min(v, w);
  } else if (op == OA_PROD) {
    v *= w;
  } else if (oa_argmax_beats(w, j, v, i)) {
    v = w;
    i = j;
  }
}

// Butterfly over the xor masks stride, 2 stride, ... below min(span, subgroup
// size); at most 8 steps (span <= 256), unrolled so that specialised kernels
// keep only their own steps.
void oa_subgroup_reduce(uint op, inout float v, inout uint i, uint stride, uint span) {
  const uint top = min(span, gl_SubgroupSize);
  [[unroll]] for (uint b = 0u; b < 8u; ++b) {
    const uint m = stride << b;
    if (m >= top) break;
    const float w = subgroupShuffleXor(v, m);
    const uint j = op == OA_ARGMAX ? subgroupShuffleXor(i, m) : 0u;
    oa_combine(op, v, i, w, j);
  }
}

// Sum over `count` consecutive invocations (a power of two, at most the subgroup size).
float oa_subgroup_sum(float v, uint count) {
  uint i = 0u;
  oa_subgroup_reduce(OA_SUM, v, i, 1u, count);
  return v;
}

shared float oa_reduce_value[256];
shared uint oa_reduce_index[256];

void oa_segment_reduce(uint op, inout float v, inout uint i, uint stride, uint count) {
  const uint span = stride * count;
  oa_subgroup_reduce(op, v, i, stride, span);
  if (span <= gl_SubgroupSize) return;
  // Each invocation now holds the result of its subgroup's part of the
  // segment (its own value when stride >= subgroup size); parts lie `step` apart.
  const uint t = gl_LocalInvocationIndex, step = max(stride, gl_SubgroupSize);
  const uint first = t - t % span + t % stride, parts = span / step;
  oa_reduce_value[t] = v;
  if (op == OA_ARGMAX) oa_reduce_index[t] = i;
  barrier();
  v = oa_reduce_value[first];
  if (op == OA_ARGMAX) i = oa_reduce_index[first];
  for (uint k = 1u; k < parts; ++k) {
    const uint at = first + k * step;
    oa_combine(op, v, i, oa_reduce_value[at], op == OA_ARGMAX ? oa_reduce_index[at] : 0u);
  }
  barrier();  // the scratch may be reused at once
}

float oa_segment_sum(float v, uint stride, uint count) {
  uint i = 0u;
  oa_segment_reduce(OA_SUM, v, i, stride, count);
  return v;
}

float oa_segment_max(float v, uint stride, uint count) {
  uint i = 0u;
  oa_segment_reduce(OA_MAX, v, i, stride, count);
  return v;
}

// Sum over the whole workgroup. A macro, so that gl_WorkGroupSize is read
// where it is used, after the kernel's local_size declaration.
#define oa_workgroup_sum(v) oa_segment_sum(v, 1u, gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)

#endif
