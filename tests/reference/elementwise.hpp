#pragma once
// f64 oracles for elementwise ops, written from the mathematical definitions.
#include <cmath>
#include <vector>

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

}  // namespace ref
