// Conversions between f32 and the 16-bit float formats, on bit patterns
// (uint; a 16-bit value in the low half). Written once for the GPU casts
// (matrix/cast.comp) and the host (src/core/dtype.cpp includes this file as
// C++ with uint = std::uint32_t), so both round alike. Integer arithmetic
// only: no float unit's rounding mode or denormal flushing is involved.
//   f16:  IEEE 754-2008 binary16, 1 sign, 5 exponent (bias 15), 10 fraction bits.
//   bf16: the top 16 bits of an f32 (1 sign, 8 exponent, 7 fraction bits).
// Narrowing rounds to nearest, ties to even; NaN gives a quiet NaN of the same sign.
#ifndef OA_HALF_GLSL
#define OA_HALF_GLSL

// binary16 of the f32 x. |x| >= 65520 (65504, the largest finite, plus half
// its ulp) overflows to inf; below 2^-14 the result is subnormal, and
// |x| <= 2^-25 (half the smallest subnormal, a tie) gives a signed zero.
uint oa_f16_from_f32(uint x) {
  const uint sign = (x >> 16) & 0x8000u;
  const uint a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a >= 0x38800000u) {
    // Rebias the exponent (127 -> 15) and round off 13 fraction bits; a carry
    // out of the fraction correctly bumps the exponent.
    const uint r = a - 0x38000000u;
    return sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13);
  }
  if (a <= 0x33000000u) return sign;
  // Subnormal: the 24-bit significand m, in units of 2^-24, is m >> (126 - exponent).
  const uint m = (a & 0x7fffffu) | 0x800000u;
  const uint shift = 126u - (a >> 23);
  const uint q = m >> shift, rest = m & ((1u << shift) - 1u), tie = 1u << (shift - 1u);
  return sign | (q + ((rest > tie || (rest == tie && (q & 1u) != 0u)) ? 1u : 0u));
}

// The f32 of binary16 h (exact). NaN keeps its payload.
uint oa_f32_from_f16(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu;
  uint m = h & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);
  if (e != 0u) return sign | ((e + 112u) << 23) | (m << 13);
  if (m == 0u) return sign;
  // Subnormal m * 2^-24: shift until bit 10 (the implicit one of an f32) is set.
  uint exponent = 113u;
  while ((m & 0x400u) == 0u) {
    m <<= 1u;
    exponent -= 1u;
  }
  return sign | (exponent << 23) | ((m & 0x3ffu) << 13);
}

// bfloat16 of the f32 x: round off the low 16 bits. Rounding up from
// FLT_MAX's neighbourhood carries into the exponent and gives inf.
uint oa_bf16_from_f32(uint x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x0040u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// The f32 of bfloat16 b (exact).
uint oa_f32_from_bf16(uint b) { return b << 16; }

#endif
