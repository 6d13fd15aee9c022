#version 450
// y = f(x) elementwise; OP selects f. Parameters a, b: clamp bounds, the
// affine y = a * x + b, leaky_relu's negative slope, elu's alpha or pow's
// exponent (a). DT: the dtype of x and y (0 f32, 1 f16, 2 bf16; arithmetic
// in f32, the result rounded once; 3 i32 for neg and abs, wrapping as int32:
// -INT32_MIN and abs(INT32_MIN) are INT32_MIN, and bitwise_not; 4 bool for
// bitwise_not, the logical not), words and grid as in
// matrix/elementwise_quads.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint DT = 0;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 0) readonly buffer In4 { uvec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
layout(std430, binding = 1) writeonly buffer Out4 { uvec4 y4[]; };
#include "matrix/unary.push.h"

float f(float v) {
  switch (OP) {
    case Neg: return -v;
    case Exp: return exp(v);
    case Log: return log(v);
    case Sqrt: return sqrt(v);
    case Relu: return oa_maximum(v, 0.0);
    case Gelu: return oa_gelu(v);
    case Tanh: return oa_tanh(v);
    case Sigmoid: return oa_sigmoid(v);
    case Clamp: return oa_minimum(oa_maximum(v, pc.a), pc.b);
    case Affine: return pc.a * v + pc.b;
    case Abs: return abs(v);
    case Square: return v * v;
    case Rsqrt: return inversesqrt(v);
    case Reciprocal: return 1.0 / v;
    case Silu: return v * oa_sigmoid(v);
    case Sin: return sin(v);
    case Cos: return cos(v);
    case Exp2: return exp2(v);
    case Log1p: return oa_log1p(v);
    case Expm1: return oa_expm1(v);
    case Erf: return oa_erf(v);
    case Softplus: return oa_softplus(v);
    case Mish: return v * oa_tanh(oa_softplus(v));
    case Hardswish: return v * clamp(v + 3.0, 0.0, 6.0) / 6.0;
    case Sign: return isnan(v) ? v : sign(v);
    case Floor: return floor(v);
    case Ceil: return ceil(v);
    case Round: return roundEven(v);
    case LeakyRelu: return v > 0.0 ? v : pc.a * v;
    case Elu: return v > 0.0 ? v : pc.a * oa_expm1(v);
    case PowScalar: return oa_pow(v, pc.a);
  }
  return v;
}

uvec4 input_quad(uint k, uint q) { return k == 0u ? x4[q] : uvec4(0u); }
uint input_word(uint k, uint w) { return k == 0u ? x[w] : 0u; }

uint int_result(uint u) {
  switch (OP) {
    case Neg: return 0u - u;
    case Abs: return int(u) < 0 ? 0u - u : u;
    case Sign: return uint(int(int(u) > 0) - int(int(u) < 0));
  }
  return ~u;  // BitwiseNot
}

uint result(uint w, uvec3 words) {
  if (DT == 3u) return int_result(words.x);
  if (DT == 4u) return (words.x ^ 0x01010101u) & oa_bool_word_mask(w, pc.n);  // BitwiseNot of 0/1 bytes
  const uint i = w * (DT == 0u ? 1u : 2u);
  const vec2 v = oa_word_values(words.x, DT);
  return oa_word_of(vec2(f(v.x), f(v.y)), i + 1u < pc.n, DT);
}

#include "matrix/elementwise_quads.glsl"
