#version 450
// y = f(x) elementwise; OP selects f. Parameters a, b: clamp bounds or the
// affine y = a * x + b.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
OA_PUSH_BEGIN uint n; float a; float b; OA_PUSH_END

float f(float v) {
  switch (OP) {
    case 0u: return -v;
    case 1u: return exp(v);
    case 2u: return log(v);
    case 3u: return sqrt(v);
    case 4u: return max(v, 0.0);
    case 5u: return oa_gelu(v);
    case 6u: return oa_tanh(v);
    case 7u: return oa_sigmoid(v);
    case 8u: return min(max(v, pc.a), pc.b);
    case 9u: return pc.a * v + pc.b;
    case 10u: return abs(v);
    case 11u: return v * v;
    case 12u: return inversesqrt(v);
    case 13u: return 1.0 / v;
    case 14u: return v * oa_sigmoid(v);
  }
  return v;
}

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i < pc.n) y[i] = f(x[i]);
  }
}
