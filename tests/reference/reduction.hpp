#pragma once
// f64 host references for reductions, written from the definitions, over
// float or double values.
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace oa::reference {

// Per row of x viewed as [rows, L]: the sum, and the sum of magnitudes (for tolerances).
template <typename T>
std::vector<double> row_sums(const std::vector<T>& x, std::int64_t rows, std::int64_t L, std::vector<double>* magnitude = nullptr) {
  std::vector<double> s(rows, 0.0);
  if (magnitude) magnitude->assign(rows, 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < L; ++j) {
      s[r] += x[r * L + j];
      if (magnitude) (*magnitude)[r] += std::abs(double(x[r * L + j]));
    }
  return s;
}

// Per row: the maximum (NaN if the row holds a NaN) and the first index of the
// maximum (the first NaN when there is one).
template <typename T>
std::vector<double> row_max(const std::vector<T>& x, std::int64_t rows, std::int64_t L, std::vector<std::int32_t>* index = nullptr) {
  std::vector<double> m(rows);
  if (index) index->assign(rows, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double best = -std::numeric_limits<double>::infinity();
    std::int64_t at = 0;
    for (std::int64_t j = 0; j < L; ++j) {
      const double v = x[r * L + j];
      if (std::isnan(v)) {
        best = v;
        at = j;
        break;
      }
      if (v > best || j == 0) {
        best = v;
        at = j;
      }
    }
    m[r] = best;
    if (index) (*index)[r] = static_cast<std::int32_t>(at);
  }
  return m;
}

// Per row: the first index of the minimum (the first NaN when there is one).
inline std::vector<std::int32_t> row_argmin(const std::vector<float>& x, std::int64_t rows, std::int64_t L) {
  std::vector<std::int32_t> index(static_cast<std::size_t>(rows), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double best = 0;
    for (std::int64_t j = 0; j < L; ++j) {
      const double v = x[r * L + j];
      if (std::isnan(v)) {
        index[r] = static_cast<std::int32_t>(j);
        break;
      }
      if (j == 0 || v < best) {
        best = v;
        index[r] = static_cast<std::int32_t>(j);
      }
    }
  }
  return index;
}

// Sums x (shape `xs`) into `target` under NumPy broadcasting (right-aligned;
// a target extent of 1, or a missing leading axis, is summed over).
template <typename T>
std::vector<double> sum_to(const std::vector<T>& x, const std::vector<std::int64_t>& xs, const std::vector<std::int64_t>& target) {
  std::int64_t tn = 1;
  for (auto d : target) tn *= d;
  std::vector<double> y(tn, 0.0);
  const std::size_t shift = xs.size() - target.size();
  std::vector<std::int64_t> idx(xs.size(), 0);
  for (std::size_t e = 0; e < x.size(); ++e) {
    std::int64_t rest = static_cast<std::int64_t>(e);
    for (std::size_t a = xs.size(); a-- > 0;) {
      idx[a] = rest % xs[a];
      rest /= xs[a];
    }
    std::int64_t t = 0;
    for (std::size_t a = 0; a < target.size(); ++a) t = t * target[a] + (target[a] == 1 ? 0 : idx[a + shift]);
    y[t] += x[e];
  }
  return y;
}

// The axes `dims` of a rank-`rank` x (negative ones counting from the end)
// as non-negative axes; every axis when `dims` is empty (torch's dim=[]).
inline std::vector<std::int64_t> normal_axes(std::int64_t rank, const std::vector<int>& dims) {
  std::vector<std::int64_t> out;
  for (int d : dims) out.push_back(d < 0 ? d + rank : d);
  if (dims.empty())
    for (std::int64_t d = 0; d < rank; ++d) out.push_back(d);
  return out;
}

// x (shape xs) reduced over the axes `dims` (non-negative, any order): each
// result element (row-major over the kept axes) is `fold` of the values of
// its group, in x's row-major order.
inline std::vector<double> reduce_axes(const std::vector<double>& x, const std::vector<std::int64_t>& xs, const std::vector<std::int64_t>& dims,
                                       const std::function<double(const std::vector<double>&)>& fold) {
  std::vector<std::int64_t> kept_extent;
  for (std::size_t a = 0; a < xs.size(); ++a)
    if (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(a)) == dims.end()) kept_extent.push_back(xs[a]);
  std::int64_t groups = 1;
  for (auto e : kept_extent) groups *= e;
  std::vector<std::vector<double>> members(static_cast<std::size_t>(groups));
  for (std::size_t e = 0; e < x.size(); ++e) {
    std::int64_t rest = static_cast<std::int64_t>(e), g = 0, scale = 1;
    for (std::size_t a = xs.size(); a-- > 0;) {
      const std::int64_t c = rest % xs[a];
      rest /= xs[a];
      if (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(a)) == dims.end()) {
        g += c * scale;
        scale *= xs[a];
      }
    }
    members[static_cast<std::size_t>(g)].push_back(x[e]);
  }
  std::vector<double> y;
  for (const auto& m : members) y.push_back(fold(m));
  return y;
}

// Inclusive prefix sums of x (shape xs) along axis `dim`.
inline std::vector<double> cumsum(const std::vector<double>& x, const std::vector<std::int64_t>& xs, std::size_t dim) {
  std::int64_t inner = 1;
  for (std::size_t a = dim + 1; a < xs.size(); ++a) inner *= xs[a];
  const std::int64_t length = xs.empty() ? 1 : xs[dim];
  std::vector<double> y(x);
  for (std::size_t e = 0; e < y.size(); ++e) {
    const auto i = static_cast<std::int64_t>(e);
    if ((i / inner) % length > 0) y[e] += y[e - static_cast<std::size_t>(inner)];
  }
  return y;
}

}  // namespace oa::reference
