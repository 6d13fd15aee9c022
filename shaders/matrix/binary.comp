#version 450
// z = a (op) b elementwise. One operand may be broadcast: viewing the output
// as [outer, C, inner], the broadcast operand is a [C] vector indexed by
// (g / inner) % C, where g = base + i is the global element index.
// MODE 0: same shape; 1: b is broadcast; 2: a is broadcast. DT: the dtype of
// a, b and z (bound as y / y4), words and grid as in matrix/elementwise_quads.glsl;
// DT 3 (i32) takes every OP but Div in int32 arithmetic (add, sub, mul and
// pow wrap modulo 2^32; floor_divide, remainder and pow as common/math.glsl);
// DT 4 (bool: four 0/1 bytes a word, bytes past n written 0) takes add, max
// and bitwise_or (logical or), mul, min and bitwise_and (logical and), and
// bitwise_xor. Div and the bitwise ops are refused by the lowering where DT
// lacks them.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/elementwise_codes.glsl"
#include "common/half_io.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint DT = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(std430, binding = 2) writeonly buffer Z { uint y[]; };
layout(std430, binding = 2) writeonly buffer Z4 { uvec4 y4[]; };
#include "matrix/binary.push.h"
#include "matrix/binary_operands.glsl"

float op(float u, float v) {
  switch (OP) {
    case Add: return u + v;
    case Sub: return u - v;
    case Mul: return u * v;
    case Div: return u / v;
    case Max: return oa_maximum(u, v);
    case Min: return oa_minimum(u, v);
    case Pow: return oa_pow(u, v);
    case FloorDivide: return oa_floor_divide(u, v);
    case Remainder: return oa_remainder(u, v);
  }
  return u;
}

int iop(int u, int v) {
  switch (OP) {
    case Add: return u + v;
    case Sub: return u - v;
    case Mul: return u * v;
    case Max: return max(u, v);
    case Min: return min(u, v);
    case Pow: return oa_pow_int(u, v);
    case FloorDivide: return oa_floor_divide_int(u, v);
    case Remainder: return oa_remainder_int(u, v);
    case BitwiseAnd: return u & v;
    case BitwiseOr: return u | v;
    case BitwiseXor: return u ^ v;
  }
  return u;
}

// Bool words: the byte of element e of x, and the op on four elements at once.
#define BOOL_AT(x, e) ((x[(e) >> 2] >> (8u * ((e) & 3u))) & 0xffu)
uint bool_op(uint u, uint v) {
  switch (OP) {
    case Add:
    case Max:
    case BitwiseOr: return u | v;
    case BitwiseXor: return u ^ v;
  }
  return u & v;  // Mul, Min, BitwiseAnd
}

// The broadcast operand is not read by word (binary_operands.glsl).
uvec4 input_quad(uint k, uint q) {
  if (k == 0u && MODE != 2u) return a4[q];
  if (k == 1u && MODE != 1u) return b4[q];
  return uvec4(0u);
}

uint input_word(uint k, uint w) {
  if (k == 0u && MODE != 2u) return a[w];
  if (k == 1u && MODE != 1u) return b[w];
  return 0u;
}

uint result(uint w, uvec3 words) {
  if (DT == 4u) {  // a broadcast operand's word is 0 here: its bytes are gathered by channel
    uint u = words.x, v = words.y;
    for (uint k = 0u; k < 4u && MODE != 0u; ++k) {
      const uint e = min(4u * w + k, pc.n - 1u), c = channel(e);
      if (MODE == 2u) u |= BOOL_AT(a, c) << (8u * k);
      else v |= BOOL_AT(b, c) << (8u * k);
    }
    return bool_op(u, v) & oa_bool_word_mask(w, pc.n);
  }
  if (DT == 3u) return uint(iop(int(MODE == 2u ? a[channel(w)] : words.x), int(MODE == 1u ? b[channel(w)] : words.y)));
  const uint i = w * (DT == 0u ? 1u : 2u);
  const vec2 u = OPERAND(a, MODE == 2u, words.x, i), v = OPERAND(b, MODE == 1u, words.y, i);
  return oa_word_of(vec2(op(u.x, v.x), op(u.y, v.y)), i + 1u < pc.n, DT);
}

#include "matrix/elementwise_quads.glsl"
