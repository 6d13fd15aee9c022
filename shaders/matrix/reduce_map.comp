#version 450
// The elementwise steps of the composite reductions (var, std, logsumexp,
// norm): y[i] = f(x[i], r[row]) where element g = base + i belongs to row
// (g / inner) % channels and r holds one value per row.
// MODE 0: (x - r)^2, the squared deviation from the row's mean (var, std).
//      1: exp(x - shift(r)), r the row's maximum (logsumexp).
//      2: log(x) + shift(r), x the row's sum of 1 (logsumexp; inner 1).
//      3: x * x (2-norm); 4: |x| (1-norm, inf-norm); r is not read.
//      5: x - r, the deviation from the row's mean (var, std).
//      6: x - r^2, clamped at 0 (NaN kept): the variance from the scaled
//         sums of squared deviations x and of deviations r (inner 1).
//      7: the square root of 6 (std).
// shift(m) is m when finite, else 0, so that a row of -inf gives -inf and a
// row holding +inf gives +inf (torch.logsumexp).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
#include "matrix/reduce_map.push.h"

float shift(float m) { return isinf(m) ? 0.0 : m; }

void main() {
  const uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = i0 + k * 256u;
    if (i >= pc.n) return;
    const float v = x[i];
    if (MODE == 3u) {
      y[i] = v * v;
    } else if (MODE == 4u) {
      y[i] = abs(v);
    } else {
      const float m = r[((pc.base + i) / pc.inner) % pc.channels];
      if (MODE == 0u) {
        y[i] = (v - m) * (v - m);
      } else if (MODE == 1u) {
        y[i] = exp(v - shift(m));
      } else if (MODE == 2u) {
        y[i] = log(v) + shift(m);
      } else if (MODE == 5u) {
        y[i] = v - m;
      } else {
        const float c = v - m * m, var = c < 0.0 ? 0.0 : c;
        y[i] = MODE == 7u ? sqrt(var) : var;
      }
    }
  }
}
