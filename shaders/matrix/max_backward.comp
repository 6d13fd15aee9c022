#version 450
// The backward of max over rows of length `inner` (torch.amax): the gradient
// of a row goes to its maximal elements, split evenly between ties. Element
// g = base + i belongs to row (g / inner) % C.
// MODE 0: out[i] = 1 where a[i] equals its row's maximum r[row], else 0.
//         Bindings: a = x (this chunk), r = the forward's output, out (this chunk).
// MODE 1: out[i] = out[i] * a[row] / r[row], out holding the mask of MODE 0.
//         Bindings: a = gy, r = the per-row count of maxima, out (read-write).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) buffer Out { float y[]; };
#include "matrix/max_backward.push.h"

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    uint row = ((pc.base + i) / pc.inner) % pc.channels;
    if (MODE == 0u) {
      y[i] = a[i] == r[row] ? 1.0 : 0.0;
    } else {
      y[i] = y[i] * a[row] / r[row];
    }
  }
}
