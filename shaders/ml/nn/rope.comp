#version 450
// Rotary position embedding (Su et al. 2021, RoFormer) in the half-split layout
// of GPT-NeoX and Llama: x viewed as [R, S, D] (S positions of D features),
// element pairs (i, i + D / 2) of position s rotated by the angle
//   a = (offset + s) * theta_i,   theta_i = base^(-2i / D) = exp2(-2i / D * log2(base)),
//   y_i = x_i cos a - x_{i+D/2} sin a,   y_{i+D/2} = x_{i+D/2} cos a + x_i sin a.
// INVERSE rotates by -a: the backward (a rotation's transpose is its inverse).
// An invocation serves one pair; angles in f32, as PyTorch models compute them.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool INVERSE = false;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "ml/nn/rope.push.h"

void main() {
  const uint t = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (t >= pc.pairs) return;
  const uint row = t / pc.half_d, i = t % pc.half_d;
  const float theta = exp2(-float(2u * i) / float(2u * pc.half_d) * pc.log2_base);
  const float a = float(pc.offset + row % pc.S) * theta;
  const float c = cos(a), s = INVERSE ? -sin(a) : sin(a);
  const uint lo = row * 2u * pc.half_d + i, hi = lo + pc.half_d;
  const float u = x[lo], v = x[hi];
  y[lo] = u * c - v * s;
  y[hi] = v * c + u * s;
}
