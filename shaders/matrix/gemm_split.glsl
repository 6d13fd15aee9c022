// Shared by matrix/gemm_split and matrix/gemm_split_epilogue: the f32 GEMM of
// Engine::set_float32_matmul_precision(High) as three f16 products of scaled
// operands (Ootomo & Yokota, IJHPCA 2022).
#ifndef OA_GEMM_SPLIT_GLSL
#define OA_GEMM_SPLIT_GLSL

// The scale exponent of a line (row of A, column of B) that holds inf or NaN:
// its outputs are FP32 dot products of the original operands.
const int OA_SPLIT_NONFINITE = 0x40000000;

// The exponent t that puts a line's largest magnitude (f32 bits m, finite or
// not) in [2^14, 2^15) as m * 2^t: 0 for a zero line, OA_SPLIT_NONFINITE for
// inf or NaN. Integer arithmetic, subnormals included.
int oa_split_exponent(uint m) {
  if (m >= 0x7f800000u) return OA_SPLIT_NONFINITE;
  if (m == 0u) return 0;
  return 14 - (m >= 0x00800000u ? int(m >> 23) - 127 : findMSB(m) - 149);
}

// v * 2^t for |t| <= 378, by up to three exact power-of-two factors of at
// most 2^126 in magnitude: exact where the result is a normal f32 (a
// subnormal result may be rounded twice, or flushed where the device flushes).
float oa_scale_pow2(float v, int t) {
  for (int i = 0; i < 3 && t != 0; ++i) {
    const int s = clamp(t, -126, 126);
    v *= uintBitsToFloat(uint(s + 127) << 23);
    t -= s;
  }
  return v;
}

#endif
