#pragma once
// f64 oracles for elementwise ops, written from the mathematical definitions.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/indexing.hpp"

namespace ref {

inline std::vector<double> to_f64(const std::vector<float>& v) { return {v.begin(), v.end()}; }

template <typename F>
std::vector<double> map(const std::vector<double>& x, F f) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}

inline double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

// a (op) b over their NumPy broadcast `out`, as bytes 0 or 1; op is "eq",
// "ne", "lt", "le", "gt" or "ge" (C++'s double comparisons: IEEE 754, NaN
// unordered).
inline std::vector<std::uint8_t> compare(const std::string& op, const std::vector<double>& a, const std::vector<std::int64_t>& as,
                                         const std::vector<double>& b, const std::vector<std::int64_t>& bs,
                                         const std::vector<std::int64_t>& out) {
  std::vector<std::uint8_t> r(static_cast<std::size_t>(oa::reference::count_of(out)));
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto c = oa::reference::coordinates(static_cast<std::int64_t>(i), out);
    const double u = a[static_cast<std::size_t>(oa::reference::broadcast_index(c, as))];
    const double v = b[static_cast<std::size_t>(oa::reference::broadcast_index(c, bs))];
    const bool t = op == "eq" ? u == v : op == "ne" ? u != v : op == "lt" ? u < v : op == "le" ? u <= v : op == "gt" ? u > v : u >= v;
    r[i] = t ? 1 : 0;
  }
  return r;
}

}  // namespace ref
