// Element access to f32, f16 and bf16 arrays bound as 32-bit words, for the
// kernels that take 16-bit storage (the GEMMs, flash attention, the
// convolutions' columns, the elementwise and layout kernels).
// Every operand is bound as 32-bit words; a dtype code (as matrix/cast: 0 f32,
// 1 f16, 2 bf16) says how to read them. An f32 element i is word i. A 16-bit
// element i is the low (i even) or high (i odd) half of word i / 2, and four
// 16-bit elements from a multiple of 4 are one uvec2. Widening is exact,
// narrowing rounds to nearest, ties to even (common/half.glsl).
#ifndef OA_HALF_IO_GLSL
#define OA_HALF_IO_GLSL
#include "common/half.glsl"

float oa_widen(uint h, uint dtype) { return uintBitsToFloat(dtype == 1u ? oa_f32_from_f16(h) : oa_f32_from_bf16(h)); }

// Element i of a 16-bit matrix from w, its word i / 2.
float oa_half_at(uint w, uint i, uint dtype) { return oa_widen((i & 1u) != 0u ? w >> 16 : w & 0xffffu, dtype); }

vec4 oa_half_quad(uvec2 w, uint dtype) {
  return vec4(oa_widen(w.x & 0xffffu, dtype), oa_widen(w.x >> 16, dtype), oa_widen(w.y & 0xffffu, dtype), oa_widen(w.y >> 16, dtype));
}

uint oa_narrow(float v, uint dtype) {
  const uint x = floatBitsToUint(v);
  return dtype == 1u ? oa_f16_from_f32(x) : oa_bf16_from_f32(x);
}

uvec2 oa_pack_quad(vec4 v, uint dtype) {
  return uvec2(oa_narrow(v.x, dtype) | (oa_narrow(v.y, dtype) << 16), oa_narrow(v.z, dtype) | (oa_narrow(v.w, dtype) << 16));
}

// The elements of word w of an array of `dtype` as floats: one (f32; .y is
// then 0) or two (16-bit: .x the low half, .y the high one).
vec2 oa_word_values(uint w, uint dtype) {
  return dtype == 0u ? vec2(uintBitsToFloat(w), 0.0) : vec2(oa_widen(w & 0xffffu, dtype), oa_widen(w >> 16, dtype));
}

// The word of `dtype` holding v (f32: v.x alone). A 16-bit word's high half is
// zero when `both` is false (the word after an odd element count's last).
uint oa_word_of(vec2 v, bool both, uint dtype) {
  return dtype == 0u ? floatBitsToUint(v.x) : oa_narrow(v.x, dtype) | (both ? oa_narrow(v.y, dtype) << 16 : 0u);
}

// The bytes of bool word w (four elements, from 4w) that hold one of the n
// elements: 0xff each, 0 past n.
uint oa_bool_word_mask(uint w, uint n) { return n - 4u * w >= 4u ? 0xffffffffu : (1u << (8u * (n - 4u * w))) - 1u; }

// Element i (dtype code `dtype`) of the word array `words`, as a float.
#define OA_LOAD_ANY(words, i, dtype) \
  ((dtype) == 0u ? uintBitsToFloat(words[i]) : oa_half_at(words[(i) >> 1], (i), (dtype)))

// Stores float v as element i of `words`. A 16-bit element shares its word
// with a neighbour that another invocation may store at the same time, so it
// is cleared and set by two atomics that touch only its own half.
#define OA_STORE_ANY(words, i, v, dtype)                                   \
  if ((dtype) == 0u) {                                                     \
    words[i] = floatBitsToUint(v);                                         \
  } else {                                                                 \
    const uint oa_shift = ((i) & 1u) * 16u;                                \
    atomicAnd(words[(i) >> 1], ~(0xffffu << oa_shift));                    \
    atomicOr(words[(i) >> 1], oa_narrow((v), (dtype)) << oa_shift);        \
  }

#endif
