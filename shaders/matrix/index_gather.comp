#version 450
// Gather along one axis for index_select and gather: x is viewed as
// [outer, N, inner] around the axis and the result as [outer, K, inner];
// result element (o, k, i) is x[o, v, i] with v the i32 index
//   MODE 0 (index_select): index[k]           (index is [K])
//   MODE 1 (gather):       index[(o K + k) inner + i]  (index has the result's shape)
// An index outside [0, N) gives 0 and fails the op's device check (binding 3,
// Engine::register_device_check: id pc.check_id, the index as the value;
// check_id 0 in a backward, whose forward checked the same index).
// Elements move as bits: SIZE is the element's bytes, 4 (f32, i32), 2 (f16,
// bf16) or 1 (bool), PER = 4 / SIZE of them to a 32-bit word of y (past n a
// word's high bits are 0); each invocation writes 4 words.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint SIZE = 4;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };
layout(std430, binding = 3) buffer Check { uint check[]; };
#include "matrix/index_gather.push.h"
#include "common/device_check.glsl"

const uint PER = 4u / SIZE, BITS = 8u * SIZE;

// The bits of result element i (0 for an index outside [0, N)).
uint gathered(uint i) {
  const uint in_row = i % pc.inner, k = (i / pc.inner) % pc.K, o = i / (pc.inner * pc.K);
  const int v = MODE == 0u ? index[k] : index[i];
  const bool inside = v >= 0 && uint(v) < pc.N;
  if (!inside && pc.check_id != 0u) oa_fail_check(pc.check_id, v);
  if (!inside) return 0u;
  const uint e = (o * pc.N + uint(v)) * pc.inner + in_row;
  return PER == 1u ? x[e] : (x[e / PER] >> (e % PER * BITS)) & (0xffffffffu >> (32u - BITS));
}

void main() {
  const uint w0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint w = w0 + e * 256u;
    if (PER * w >= pc.n) return;
    uint word = 0u;
    for (uint k = 0u; k < PER && PER * w + k < pc.n; ++k) word |= gathered(PER * w + k) << (k * BITS);
    y[w] = word;
  }
}
