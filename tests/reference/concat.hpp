#pragma once
// f64 reference for concatenation along one axis, from the definition: the
// element at multi-index (..., j, ...) of the result comes from the operand
// whose range of the axis holds j.
#include <cstdint>
#include <vector>

namespace oa::reference {

// Operands given by their data (float or double) and shapes (equal except at `axis`).
template <typename T>
std::vector<double> concat(const std::vector<std::vector<T>>& xs, const std::vector<std::vector<std::int64_t>>& shapes,
                           std::size_t axis) {
  std::int64_t outer = 1, inner = 1, total = 0;
  for (std::size_t d = 0; d < axis; ++d) outer *= shapes[0][d];
  for (std::size_t d = axis + 1; d < shapes[0].size(); ++d) inner *= shapes[0][d];
  for (const auto& s : shapes) total += s[axis];
  std::vector<double> y(static_cast<std::size_t>(outer * total * inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < total; ++j)
      for (std::int64_t i = 0; i < inner; ++i) {
        std::size_t part = 0;
        std::int64_t local = j;
        while (local >= shapes[part][axis]) local -= shapes[part++][axis];
        y[(o * total + j) * inner + i] = xs[part][(o * shapes[part][axis] + local) * inner + i];
      }
  return y;
}

}  // namespace oa::reference
