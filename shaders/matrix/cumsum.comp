#version 450
// Inclusive prefix sums along one axis: x viewed as [outer, L, inner]
// (row-major), y[o, l, j] = sum of x[o, k, j] for k <= l (REVERSE: k >= l,
// the backward of cumsum). One invocation scans one (o, j) line serially,
// compensated (Kahan) so that long lines keep f32 accuracy; neighbouring
// invocations take neighbouring j, so reads and writes along inner coalesce.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool REVERSE = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "matrix/cumsum.push.h"

void main() {
  const uint line = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (line >= pc.lines) return;
  const uint o = line / pc.inner, j = line % pc.inner;
  precise float sum = 0.0, carry = 0.0;
  for (uint k = 0u; k < pc.L; ++k) {
    const uint l = REVERSE ? pc.L - 1u - k : k;
    const uint at = (o * pc.L + l) * pc.inner + j;
    precise const float t = x[at] - carry, s = sum + t;
    carry = (s - sum) - t;
    sum = s;
    y[at] = sum;
  }
}
