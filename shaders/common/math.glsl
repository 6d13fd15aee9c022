#ifndef OA_MATH_GLSL
#define OA_MATH_GLSL
// erf by Abramowitz & Stegun 7.1.26 refined with one extra term (|error| < 2e-7).
float oa_erf(float x) {
  float s = sign(x);
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return s * y;
}
// GELU(x) = x * Phi(x) with the exact (erf) form, as torch.nn.functional.gelu.
float oa_gelu(float x) { return 0.5 * x * (1.0 + oa_erf(x * 0.7071067811865476)); }
float oa_gelu_grad(float x) {
  return 0.5 * (1.0 + oa_erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x);
}
float oa_sigmoid(float x) { return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
// d/dx x sigmoid(x) = s (1 + x (1 - s)), s = sigmoid(x).
float oa_silu_grad(float x) {
  float s = oa_sigmoid(x);
  return s * (1.0 + x * (1.0 - s));
}
// log(1 + x). Below |x| = 0.25: 2 atanh(z), z = x / (2 + x) (|z| < 0.15), by
// its odd series to z^11, since GPU logs are accurate near 1 only to an
// absolute error (GLSL allows 2^-21). Beyond: Goldberg's form (1991), where
// the rounding of 1 + x cancels.
float oa_log1p(float x) {
  if (abs(x) < 0.25) {
    const float z = x / (2.0 + x), w = z * z;
    return 2.0 * z * (1.0 + w * (1.0 / 3.0 + w * (1.0 / 5.0 + w * (1.0 / 7.0 + w * (1.0 / 9.0 + w * (1.0 / 11.0))))));
  }
  const float u = 1.0 + x;
  return log(u) * (x / (u - 1.0));
}
// exp(x) - 1. Below |x| = 0.25 its Taylor series to x^8 (relative error below
// 1e-10); beyond, Kahan's form, where the rounding of exp(x) cancels.
float oa_expm1(float x) {
  if (abs(x) < 0.25)
    return x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0))))))));
  const float u = exp(x);
  if (u - 1.0 == -1.0) return -1.0;
  return isinf(u) ? u : (u - 1.0) * (x / log(u));
}
// log(1 + exp(x)), linear above 20 (torch.nn.functional.softplus, beta 1, threshold 20).
float oa_softplus(float x) { return x > 20.0 ? x : oa_log1p(exp(x)); }
// tanh(x): below |x| = 0.2 its odd Taylor polynomial to x^11 (relative error
// below 1e-10 there, where 1 - exp(-2|x|) would cancel), else
// sign(x) (1 - e) / (1 + e) with e = exp(-2|x|).
float oa_tanh(float x) {
  const float a = abs(x);
  if (a < 0.2) {
    const float s = x * x;
    return x + x * s * (-1.0 / 3.0 + s * (2.0 / 15.0 + s * (-17.0 / 315.0 + s * (62.0 / 2835.0 + s * (-1382.0 / 155925.0)))));
  }
  const float e = exp(-2.0 * a);
  return sign(x) * (1.0 - e) / (1.0 + e);
}
// max and min as torch.maximum / torch.minimum (and so relu and clamp): NaN
// where either operand is NaN (GLSL's max and min may return the other one).
float oa_maximum(float a, float b) { return isnan(a) || isnan(b) ? a + b : max(a, b); }
float oa_minimum(float a, float b) { return isnan(a) || isnan(b) ? a + b : min(a, b); }
// a^b as torch.pow (C's pow): 1 when b is 0 (NaN^0 included) or a is 1
// (1^NaN included), else NaN for a NaN operand; C's signed zeros and
// infinities: (+-0)^b and (+-inf)^b are 0 or inf, negative for a negative
// base and an odd integer b; (-1)^(+-inf) = 1, and |a| < 1 gives inf toward
// -inf and 0 toward +inf (|a| > 1 the reverse). A negative finite base with a
// fractional exponent gives NaN. Integer exponents up to 64 in magnitude
// multiply by squaring (a few roundings, where exp2(b log2 |a|) loses about
// |b log2 |a|| ulps), b = 0.5 is sqrt (rounded once), other b exp2(b log2 |a|).
float oa_pow(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return a + b;
  const float mag = abs(a);
  if (isinf(b)) return mag == 1.0 ? 1.0 : (mag < 1.0) == (b < 0.0) ? 1.0 / 0.0 : 0.0;
  const bool integer = b == floor(b);  // every finite |b| >= 2^24 is an even integer
  const bool odd = integer && abs(b) < 16777216.0 && mod(b, 2.0) == 1.0;
  const bool negative = (floatBitsToUint(a) >> 31) != 0u;  // -0 included
  if (mag == 0.0 || isinf(mag)) {
    const float m = (mag == 0.0) == (b < 0.0) ? 1.0 / 0.0 : 0.0;
    return odd && negative ? -m : m;
  }
  if (negative && !integer) return uintBitsToFloat(0x7fc00000u);
  float m;
  if (integer && abs(b) <= 64.0) {
    uint n = uint(abs(b));
    float x = mag;
    m = 1.0;
    while (true) {
      if ((n & 1u) != 0u) m *= x;
      n >>= 1;
      if (n == 0u) break;
      x *= x;
    }
    if (b < 0.0) m = 1.0 / m;
  } else if (b == 0.5) {
    m = sqrt(mag);
  } else {
    m = exp2(b * log2(mag));
  }
  return odd && negative ? -m : m;
}

// C's fmod(u, v), exact for every operand (as ATen's std::fmod): the
// largest v 2^k not above |u| is subtracted while |u| >= |v|, each subtraction
// exact (Sterbenz), so no fused multiply-add is needed (GLSL's fma() may be
// split into a rounded product and a sum, as lavapipe does). NaN for an
// infinite u, a zero v or NaN operands; u for an infinite v.
float oa_fmod(float u, float v) {
  if (isnan(u) || isnan(v) || isinf(u) || v == 0.0) return uintBitsToFloat(0x7fc00000u);
  float a = abs(u);
  const float b = abs(v);
  if (isinf(v) || a < b) return u;
  int eb;
  frexp(b, eb);
  for (int i = 0; i < 320 && a >= b; ++i) {
    int ea;
    frexp(a, ea);
    float bk = ldexp(b, ea - eb);
    if (bk > a) bk = ldexp(b, ea - eb - 1);
    a -= bk;
  }
  return u < 0.0 ? -a : a;
}

// torch.floor_divide and torch.remainder of floats (ATen's div_floor_floating
// and remainder, from the exact fmod): a zero remainder is +-0 as the divisor;
// v = 0 gives u / v (+-inf, NaN for 0 / 0) and a NaN remainder, as IEEE 754.
float oa_floor_divide(float u, float v) {
  if (v == 0.0) return u / v;
  const float m = oa_fmod(u, v);
  float d = (u - m) / v;
  if (m != 0.0 && (v < 0.0) != (m < 0.0)) d -= 1.0;
  if (d == 0.0) return uintBitsToFloat(floatBitsToUint(u / v) & 0x80000000u);  // +-0 with the quotient's sign
  float f = floor(d);
  if (d - f > 0.5) f += 1.0;
  return f;
}

float oa_remainder(float u, float v) {
  const float m = oa_fmod(u, v);
  if (m == 0.0) return uintBitsToFloat(floatBitsToUint(v) & 0x80000000u);  // +-0 with the divisor's sign
  return (v < 0.0) != (m < 0.0) ? m + v : m;
}

// torch's integer floor division and remainder (int32, wrapping: INT32_MIN
// // -1 is INT32_MIN), in unsigned arithmetic, where GLSL defines / and % for
// every operand; a zero divisor gives 0 for both (the caller checks: torch's
// CPU kernels raise ZeroDivisionError).
int oa_floor_divide_int(int u, int v) {
  if (v == 0) return 0;
  const uint au = u < 0 ? 0u - uint(u) : uint(u), av = v < 0 ? 0u - uint(v) : uint(v), q = au / av;
  if ((u < 0) == (v < 0)) return int(q);
  return int(0u - (au % av != 0u ? q + 1u : q));
}

int oa_remainder_int(int u, int v) {
  if (v == 0) return 0;
  const uint au = u < 0 ? 0u - uint(u) : uint(u), av = v < 0 ? 0u - uint(v) : uint(v), r = au % av;
  if (r == 0u) return 0;
  return (u < 0) == (v < 0) ? int(u < 0 ? 0u - r : r) : int(u < 0 ? av - r : r - av);
}

// u^v in int32 arithmetic (wrapping, by squaring), as torch's integer pow: a
// negative v gives 1 for u = 1, +-1 for u = -1 and 0 otherwise.
int oa_pow_int(int u, int v) {
  if (v < 0) return u == 1 ? 1 : u == -1 ? ((v & 1) != 0 ? -1 : 1) : 0;
  uint r = 1u, b = uint(u);
  for (uint e = uint(v); e != 0u; e >>= 1) {
    if ((e & 1u) != 0u) r *= b;
    b *= b;
  }
  return int(r);
}
#endif
