#pragma once
// f64 references for the nn modules, written from the definitions: the
// affine map and layer normalisation.
#include <cmath>
#include <cstdint>
#include <vector>

namespace oa::reference {

// y [rows, out] = x [rows, in] W^T + b, W [out, in], b [out] or empty.
inline std::vector<double> linear(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                                  std::int64_t rows, std::int64_t in, std::int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i)
        s += x[static_cast<std::size_t>(r * in + i)] * w[static_cast<std::size_t>(o * in + i)];
      y[static_cast<std::size_t>(r * out + o)] = s;
    }
  return y;
}

// Each row of x [rows, d] normalised with its mean and biased variance, then
// scaled by weight and shifted by bias (either may be empty: 1 and 0).
inline std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                                      const std::vector<double>& bias, std::int64_t rows, std::int64_t d, double eps) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (std::int64_t i = 0; i < d; ++i) mean += x[static_cast<std::size_t>(r * d + i)];
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const double c = x[static_cast<std::size_t>(r * d + i)] - mean;
      var += c * c;
    }
    var /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const auto at = static_cast<std::size_t>(r * d + i);
      double v = (x[at] - mean) / std::sqrt(var + eps);
      if (!weight.empty()) v *= weight[static_cast<std::size_t>(i)];
      if (!bias.empty()) v += bias[static_cast<std::size_t>(i)];
      y[at] = v;
    }
  }
  return y;
}

}  // namespace oa::reference
