#pragma once
// Comparison helpers shared by all tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "oa/core/error.hpp"
#include "oa/core/op.hpp"

namespace oa_test {

// |got - want| <= atol + rtol * |want| element by element; reports the first misses.
inline ::testing::AssertionResult near(const std::vector<float>& got, const std::vector<double>& want, double atol = 1e-5,
                                       double rtol = 1e-4) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  int misses = 0;
  std::string msg;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w) || std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok && misses++ < 5) msg += " [" + std::to_string(i) + "] got " + std::to_string(g) + " want " + std::to_string(w);
  }
  if (misses) return ::testing::AssertionFailure() << misses << " mismatches:" << msg;
  return ::testing::AssertionSuccess();
}

// Runs f, expecting oa::Error of `kind` whose message contains every fragment.
template <typename F>
::testing::AssertionResult throws(F&& f, oa::ErrorKind kind, const std::vector<const char*>& fragments) {
  try {
    f();
  } catch (const oa::Error& e) {
    if (e.kind() != kind) return ::testing::AssertionFailure() << "wrong kind: " << e.what();
    for (auto* frag : fragments)
      if (std::string(e.what()).find(frag) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks \"" << frag << "\": " << e.what();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no oa::Error thrown";
}
template <typename F>
::testing::AssertionResult throws(F&& f, oa::ErrorKind kind, std::initializer_list<const char*> fragments) {
  return throws(std::forward<F>(f), kind, std::vector<const char*>(fragments));
}

// The values of `v` widened to f64 (what the references take).
inline std::vector<double> f64(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// n values uniform in [-1, 1) from std::mt19937(seed).
inline std::vector<float> random_values(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// How many recorded ops carry `label` (e.g. "oa::matrix::matmul backward").
inline std::size_t count_label(const std::vector<oa::SemanticOp>& ops, const std::string& label) {
  std::size_t n = 0;
  for (const auto& o : ops) n += o.label() == label;
  return n;
}

inline std::vector<float> iota(std::size_t n, float start = 0, float step = 1) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

// Runs checks built up front (a sweep's cases, each a closure).
inline void run_checks(const std::vector<std::function<void()>>& checks) {
  for (const auto& check : checks) check();
}

}  // namespace oa_test
