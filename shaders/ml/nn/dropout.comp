#version 450
// Dropout with a counter-based mask (common/philox.glsl): element i is kept
// when the unit float of word i of the seed's stream is at least p, and then
// scaled by 1 / (1 - p); dropped elements are zero. The mask is a function of
// (seed, i) alone, so the backward pass regenerates it instead of storing it
// (dropout is linear: dx = dropout(dy) with the same seed). Word i is the one
// Matrix::uniform uses for element i. An invocation serves four consecutive
// elements, the four words of one Philox counter (`base` is a multiple of 4).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/philox.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "ml/nn/dropout.push.h"

void main() {
  const uint i0 = (OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x) * 4u;
  if (i0 >= pc.n) return;
  const uvec4 r = oa_philox(uvec4((pc.base + i0) / 4u, 0u, 0u, 0u), uvec2(pc.seed_lo, pc.seed_hi));
  for (uint k = 0u; k < 4u && i0 + k < pc.n; ++k) y[i0 + k] = oa_unit_float(r[k]) >= pc.p ? x[i0 + k] * pc.scale : 0.0;
}
