#ifndef OA_NORM_ROW_GLSL
#define OA_NORM_ROW_GLSL
// Item access of the row kernels of layer_norm (layer_norm.comp,
// layer_norm_backward.comp) over the layout of common/row_items.glsl: a row
// of D columns is D / WIDTH items (with GROUPED, WIDTH is 4 only when also
// S % 4 == 0, so that an item's columns share a channel). An invocation keeps
// its items lane + n * LANES (row_item(n)), n < CACHE, in registers, so rows
// up to LANES * CACHE items are read from memory once; items past that are
// re-read. An item is a vec4, of which only .x is meaningful when WIDTH is 1.
// Include after the push-constant block (D, and for norm_channel G, S, row0)
// and the float views x, w and their vec4 views x4, w4 (the same bindings).
#include "common/rows.glsl"
#include "common/row_items.glsl"
#include "ml/nn/norm_channel.glsl"

// Item i of row `row` of a [R, D] tensor bound as floats f and vec4s f4.
#define NORM_LOAD(f, f4, row, i) (WIDTH == 4u ? f4[(row) * (pc.D / 4u) + (i)] : vec4(f[(row) * pc.D + (i)], 0.0, 0.0, 0.0))
#define NORM_STORE(f, f4, row, i, v) \
  if (WIDTH == 4u) f4[(row) * (pc.D / 4u) + (i)] = (v); \
  else f[(row) * pc.D + (i)] = (v).x
// The weight (or bias: f, f4) entries of item i of row `row` (ml/nn/norm_channel.glsl).
#define NORM_AFFINE(f, f4, row, i) (GROUPED ? vec4(f[norm_channel(row, (i) * WIDTH)]) : WIDTH == 4u ? f4[i] : vec4(f[i]))

// The sum of an item's meaningful components.
float norm_item_sum(vec4 v) { return WIDTH == 4u ? (v.x + v.y) + (v.z + v.w) : v.x; }
#endif
