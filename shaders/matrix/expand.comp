#version 450
// out = scale * v broadcast to the output's shape: viewing the output as
// [outer, C, inner], element g = base + i reads v[(g / inner) % C] (the
// indexing of a broadcast operand in matrix/binary.comp). The backward of
// sum, mean and sum_to. DT: the dtype of v and out, words as in
// matrix/unary.comp.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half_io.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DT = 0;
layout(std430, binding = 0) readonly buffer V { uint v[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
#include "matrix/expand.push.h"

float value(uint i) { return pc.scale * OA_LOAD_ANY(v, ((pc.base + i) / pc.inner) % pc.channels, DT); }

void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x, per = DT == 0u ? 1u : 2u;
  for (uint k = 0u; k < 4u; ++k) {
    const uint w = w0 + k * 256u, i = w * per;
    if (i >= pc.n) return;
    const bool both = i + 1u < pc.n;
    y[w] = oa_word_of(vec2(value(i), both ? value(i + 1u) : 0.0), both, DT);
  }
}
