#ifndef OA_NORM_ROW_GLSL
#define OA_NORM_ROW_GLSL
// The row layout of the row kernels of layer_norm (layer_norm.comp,
// layer_norm_backward.comp): the rows of common/rows.glsl, a row of D columns
// read as D / WIDTH items of WIDTH consecutive columns. WIDTH (constant 1) is 4
// (vec4 loads and stores) when D % 4 == 0, and with GROUPED also S % 4 == 0 so
// that an item's columns share a channel; else 1. A row's invocation `lane`
// keeps items lane + n * LANES, n < CACHE (constant 2), in registers, so rows
// up to LANES * CACHE items are read from memory once; items past that are
// re-read. In a WIDTH 1 item only .x is meaningful. Include after the
// push-constant block (D, and for norm_channel G, S, row0) and the float views
// x, w and their vec4 views x4, w4 (the same bindings).
#include "common/rows.glsl"
#include "ml/nn/norm_channel.glsl"
layout(constant_id = 1) const uint WIDTH = 1;
layout(constant_id = 2) const uint CACHE = 1;

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
