#pragma once
// f64 reference for the affine map (torch.nn.functional.linear), written
// from the definition.
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

}  // namespace oa::reference
