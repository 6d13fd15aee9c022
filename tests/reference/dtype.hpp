#pragma once
// f64 oracles for the 16-bit float formats, written from their definitions
// (IEEE 754-2008 binary16; bfloat16 as torch.bfloat16) rather than from bit
// tricks: a pattern's value by ldexp, and rounding as the search for the
// nearest value of the format (ties to the even pattern), with the first
// pattern past the largest finite value standing for infinity at the next
// power of two (so that x >= max + ulp/2 overflows, as roundTiesToEven does).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace oa::reference {

struct Float16Format {
  int exponent_bits;  // 5 for f16, 8 for bf16
  int fraction_bits;  // 10 for f16, 7 for bf16
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  std::uint16_t inf() const { return static_cast<std::uint16_t>(((1u << exponent_bits) - 1) << fraction_bits); }
};
inline constexpr Float16Format kF16{5, 10};
inline constexpr Float16Format kBF16{8, 7};

// The value of pattern h (NaN for every NaN pattern).
inline double decode(const Float16Format& f, std::uint16_t h) {
  const int e = (h >> f.fraction_bits) & ((1 << f.exponent_bits) - 1);
  const int m = h & ((1 << f.fraction_bits) - 1);
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == (1 << f.exponent_bits) - 1) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias() - f.fraction_bits);
  return sign * std::ldexp(m + (1 << f.fraction_bits), e - f.bias() - f.fraction_bits);
}

// The pattern of each x rounded to nearest, ties to even (some NaN pattern for NaN).
inline std::vector<std::uint16_t> round_all(const Float16Format& f, const std::vector<float>& xs) {
  std::vector<double> values;
  for (std::uint32_t h = 0; h < f.inf(); ++h) values.push_back(decode(f, static_cast<std::uint16_t>(h)));
  values.push_back(std::ldexp(1.0, f.bias() + 1));
  std::vector<std::uint16_t> out;
  for (float x : xs) {
    if (std::isnan(x)) {
      out.push_back(static_cast<std::uint16_t>(f.inf() | 1u));
      continue;
    }
    const double a = std::abs(static_cast<double>(x));
    std::uint32_t h;
    if (a >= values.back()) {
      h = f.inf();
    } else {
      const auto hi = static_cast<std::uint32_t>(std::upper_bound(values.begin(), values.end(), a) - values.begin());
      const std::uint32_t lo = hi - 1;
      const double dl = a - values[lo], dh = values[hi] - a;
      h = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    }
    out.push_back(static_cast<std::uint16_t>(h | (std::signbit(x) ? 0x8000u : 0u)));
  }
  return out;
}

// The spacing of format f's values at |x| (finite x): 2^(e - fraction_bits)
// for |x| in [2^e, 2^(e+1)), the subnormal spacing below the smallest normal.
inline double ulp(const Float16Format& f, double x) {
  const int min_exponent = 1 - f.bias();
  const int e = x == 0.0 ? min_exponent : std::max(std::ilogb(x), min_exponent);
  return std::ldexp(1.0, e - f.fraction_bits);
}

// Each x rounded to format f (to nearest, ties to even), as a float (exact).
inline std::vector<float> rounded(const Float16Format& f, const std::vector<float>& xs) {
  std::vector<float> out;
  for (std::uint16_t h : round_all(f, xs)) out.push_back(static_cast<float>(decode(f, h)));
  return out;
}

}  // namespace oa::reference
