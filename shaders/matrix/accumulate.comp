#version 450
// y += x elementwise, in place (f32): autograd's gradient accumulation into a
// buffer it owns. The grid and 128-bit accesses of matrix/elementwise_quads.glsl
// (every quad of y and x is loaded before any is stored).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(std430, binding = 0) buffer Y { uint y[]; };
layout(std430, binding = 0) buffer Y4 { uvec4 y4[]; };
layout(std430, binding = 1) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer X4 { uvec4 x4[]; };
#include "matrix/accumulate.push.h"
const uint DT = 0u;  // f32 words

uvec4 input_quad(uint k, uint q) { return k == 0u ? y4[q] : k == 1u ? x4[q] : uvec4(0u); }
uint input_word(uint k, uint w) { return k == 0u ? y[w] : k == 1u ? x[w] : 0u; }
uint result(uint w, uvec3 words) { return floatBitsToUint(uintBitsToFloat(words.x) + uintBitsToFloat(words.y)); }

#include "matrix/elementwise_quads.glsl"
