#version 450
// Gather along one axis for index_select and gather: x is viewed as
// [outer, N, inner] around the axis and the result as [outer, K, inner];
// result element (o, k, i) is x[o, v, i] with v the i32 index
//   MODE 0 (index_select): index[k]           (index is [K])
//   MODE 1 (gather):       index[(o K + k) inner + i]  (index has the result's shape)
// An index outside [0, N) gives 0 and fails the op's device check (binding 3,
// Engine::register_device_check: id pc.check_id, the index as the value;
// check_id 0 in a backward, whose forward checked the same index).
// 32-bit elements (f32 or i32 bits); each invocation writes 4 elements.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };
layout(std430, binding = 3) buffer Check { uint check[]; };
#include "matrix/index_gather.push.h"
#include "common/device_check.glsl"

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = i0 + e * 256u;
    if (i >= pc.n) return;
    const uint in_row = i % pc.inner, k = (i / pc.inner) % pc.K, o = i / (pc.inner * pc.K);
    const int v = MODE == 0u ? index[k] : index[i];
    const bool inside = v >= 0 && uint(v) < pc.N;
    if (!inside && pc.check_id != 0u) oa_fail_check(pc.check_id, v);
    y[i] = inside ? x[(o * pc.N + uint(v)) * pc.inner + in_row] : 0u;
  }
}
