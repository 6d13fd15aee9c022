#version 450
// gx = gy * f'(.) for the unary ops of matrix/unary.comp (same OP numbering).
// `s` is the value the forward saved: its input x for log, relu, gelu, silu,
// clamp, abs, square, sin, cos, log1p, erf, softplus, mish, hardswish,
// leaky_relu, elu, pow; its output y for exp, sqrt, tanh, sigmoid, rsqrt,
// reciprocal, exp2, expm1; unused (bound to gy) for neg, affine and the
// piecewise-constant sign, floor, ceil, round (gradient 0, as PyTorch).
// Parameters a, b: clamp bounds, the affine scale a, leaky_relu's slope, elu's alpha or pow's exponent (a).
// DT: the dtype of gy, s and gx (bound as y / y4), words and grid as in matrix/elementwise_quads.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint DT = 0;
layout(std430, binding = 0) readonly buffer GY { uint gy[]; };
layout(std430, binding = 0) readonly buffer GY4 { uvec4 gy4[]; };
layout(std430, binding = 1) readonly buffer S { uint s[]; };
layout(std430, binding = 1) readonly buffer S4 { uvec4 s4[]; };
layout(std430, binding = 2) writeonly buffer GX { uint y[]; };
layout(std430, binding = 2) writeonly buffer GX4 { uvec4 y4[]; };
#include "matrix/unary.push.h"

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
    case Sin: return g * cos(v);
    case Cos: return -g * sin(v);
    case Exp2: return g * v * 0.6931471805599453;                // exp2: y ln 2
    case Log1p: return g / (1.0 + v);
    case Expm1: return g * (v + 1.0);                            // expm1: y + 1
    case Erf: return g * 1.1283791670955126 * exp(-v * v);       // 2 / sqrt(pi) exp(-x^2)
    case Softplus: return g * oa_sigmoid(v);
    case Mish: {
      const float t = oa_tanh(oa_softplus(v));
      return g * (t + v * oa_sigmoid(v) * (1.0 - t * t));
    }
    case Hardswish: return v < -3.0 ? 0.0 : v > 3.0 ? g : g * (v / 3.0 + 0.5);
    case Sign:
    case Floor:
    case Ceil:
    case Round: return 0.0;
    case LeakyRelu: return v > 0.0 ? g : pc.a * g;
    case Elu: return v > 0.0 ? g : g * pc.a * exp(v);
    case PowScalar: return pc.a == 0.0 ? 0.0 : g * pc.a * oa_pow(v, pc.a - 1.0);  // pow: b x^(b-1), 0 for b = 0
  }
  return g;
}

uvec4 input_quad(uint k, uint q) { return k == 0u ? gy4[q] : k == 1u ? s4[q] : uvec4(0u); }
uint input_word(uint k, uint w) { return k == 0u ? gy[w] : k == 1u ? s[w] : 0u; }

uint result(uint w, uvec3 words) {
  const uint i = w * (DT == 0u ? 1u : 2u);
  const vec2 g = oa_word_values(words.x, DT), v = oa_word_values(words.y, DT);
  return oa_word_of(vec2(df(g.x, v.x), df(g.y, v.y)), i + 1u < pc.n, DT);
}

#include "matrix/elementwise_quads.glsl"
