#version 450
// y = one_hot(indices, classes) (oa::matrix::one_hot): element g of the
// [..., classes] result (this chunk's elements start at global element `base`)
// is 1 when indices[g / classes] == g % classes, else 0, each written as its
// 32-bit pattern: ONE is 1's (f32 0x3f800000 or i32 1), so an index outside
// [0, classes) gives a row of zeros, and fails the op's device check (binding
// 2, Engine::register_device_check: id pc.check_id, the index as the value,
// reported by the row's first element).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer I { int indices[]; };
layout(constant_id = 0) const uint ONE = 0x3f800000u;
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(std430, binding = 2) buffer Check { uint check[]; };
#include "matrix/one_hot.push.h"
#include "common/device_check.glsl"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    const uint g = pc.base + i;
    const int v = indices[g / pc.classes];
    if (g % pc.classes == 0u && (v < 0 || uint(v) >= pc.classes)) oa_fail_check(pc.check_id, v);
    y[i] = v == int(g % pc.classes) ? ONE : 0u;
  }
}
