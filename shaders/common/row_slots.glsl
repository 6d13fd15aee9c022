// Long-row access of the row kernels that take a row's softmax statistics
// (ml/attention/softmax_forward, ml/nn/log_softmax, ml/nn/cross_entropy).
// Include after common/rows.glsl and the input's views x[] (float) and x4[]
// (vec4) of one binding.
//
// Slots: each invocation visits its row's columns 4 at a time, over the items
// of common/row_items.glsl. Slot n of lane l holds columns c(n, j), j < 4:
// l * 4 + n * 4 LANES + j, its item n, when ALIGNED (WIDTH 4: cols % 4 == 0,
// so a row starts on a 16-byte boundary and the slot is one vec4 load), else
// l + (4 n + j) * LANES, its items 4 n .. 4 n + 3 (four scalar loads). Either
// way the lanes of a row read consecutive memory. A kernel keeps its first
// SLOTS slots (its CACHE items) in registers, or loads SLOTS slots before
// folding any, so that their loads are in flight together.
//
// Online softmax (Milakov & Gimelshein 2018, "Online normalizer calculation
// for softmax"): a running maximum m and the sum s of exp(v - shift(m)) over
// the values v folded so far, rescaled by exp(shift(m) - shift(m')) when the
// maximum rises to m', so the row is read once for both. shift(m) is m, or 0
// while m is -inf (nothing but -inf folded: s stays 0, never NaN). A NaN makes
// m NaN and s NaN; +inf makes s NaN (exp(inf - inf)), as the two-pass form.
#ifndef OA_ROW_SLOTS_GLSL
#define OA_ROW_SLOTS_GLSL
#include "common/row_items.glsl"
const bool ALIGNED = WIDTH == 4u;
const uint SLOTS = CACHE * WIDTH / 4u;

uint slot_column(uint n, uint j) { return ALIGNED ? 4u * row_item(n) + j : row_item(4u * n + j); }

// Whether slot n holds a column below `end` for some lane of the row (the same answer on every lane).
bool slot_live(uint n, uint end) { return 4u * n * LANES < end; }

// Slot n of the row whose first element is x[base]; columns at or past `end` read as `fill`.
vec4 slot_load(uint base, uint n, uint end, float fill) {
  if (ALIGNED && slot_column(n, 3u) < end) return x4[(base + slot_column(n, 0u)) / 4u];
  vec4 v;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint c = slot_column(n, j);
    v[j] = c < end ? x[base + c] : fill;
  }
  return v;
}

float oa_max4(vec4 v) { return oa_max(oa_max(v.x, v.y), oa_max(v.z, v.w)); }

float online_shift(float m) { return m == -OA_INF ? 0.0 : m; }

// Folds the values v into the running (m, s).
void online_fold(inout float m, inout float s, vec4 v) {
  const float top = oa_max(m, oa_max4(v));
  // s is 0 while m is -inf: rescaling it by exp(0 - top) would give 0 * inf = NaN for top below -88.7.
  if (top != m) s = m == -OA_INF ? 0.0 : s * exp(m - online_shift(top));  // NaN top: s NaN
  m = top;
  const vec4 e = exp(v - online_shift(top));
  s += (e.x + e.y) + (e.z + e.w);
}

// A lane's s (taken at its running max m) taken at the row's max instead.
float online_rescale(float m, float s, float row_max) { return m == -OA_INF ? 0.0 : s * exp(m - online_shift(row_max)); }

#endif
