#version 450
// gx = gy * f'(.) for the unary ops of matrix/unary.comp (same OP numbering).
// `s` is the value the forward saved: its input x for log, relu, gelu, silu,
// clamp, abs, square; its output y for exp, sqrt, tanh, sigmoid, rsqrt, reciprocal;
// unused (bound to gy) for neg and affine. Parameters a, b: clamp bounds or
// the affine scale a.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(std430, binding = 0) readonly buffer GY { float gy[]; };
layout(std430, binding = 1) readonly buffer S { float s[]; };
layout(std430, binding = 2) writeonly buffer GX { float gx[]; };
OA_PUSH_BEGIN uint n; float a; float b; OA_PUSH_END

float df(float g, float v) {
  switch (OP) {
    case Neg: return -g;                                      // neg
    case Exp: return g * v;                                   // exp: y
    case Log: return g / v;                                   // log: 1 / x
    case Sqrt: return 0.5 * g / v;                             // sqrt: 1 / (2 y)
    case Relu: return v > 0.0 ? g : 0.0;                       // relu: x > 0
    case Gelu: return g * oa_gelu_grad(v);                     // gelu
    case Tanh: return g * (1.0 - v * v);                       // tanh: 1 - y^2
    case Sigmoid: return g * v * (1.0 - v);                       // sigmoid: y (1 - y)
    case Clamp: return v >= pc.a && v <= pc.b ? g : 0.0;        // clamp: inside [low, high]
    case Affine: return g * pc.a;                                // affine
    case Abs: return v > 0.0 ? g : (v < 0.0 ? -g : 0.0);     // abs: sign(x)
    case Square: return 2.0 * g * v;                            // square
    case Rsqrt: return -0.5 * g * v * v * v;                   // rsqrt: -y^3 / 2
    case Reciprocal: return -g * v * v;                             // reciprocal: -y^2
    case Silu: return g * oa_silu_grad(v);                    // silu
  }
  return g;
}

void main() {
  uint i0 = OA_GROUP_ID.x * 1024u + gl_LocalInvocationID.x;
  for (uint k = 0u; k < 4u; ++k) {
    uint i = i0 + k * 256u;
    if (i < pc.n) gx[i] = df(gy[i], s[i]);
  }
}
