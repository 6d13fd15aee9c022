#pragma once
// Helpers shared by the nn op tests (tests/ml/nn_*_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "oa/ml/functional.hpp"
#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "reference/nn.hpp"
#include "support/gradcheck.hpp"

namespace oa::nn_test {

// The names every nn op test uses; `using namespace oa::nn_test` brings them in.
using oa::Matrix;
using oa::Shape;
namespace ml = oa::ml;
namespace ref = oa::reference;
using oa::test::gradcheck;
using oa::test::max_abs;
using oa::test::random_input;
using oa::test::test_values;

using oa_test::f64;

// Common offsets of the extreme-value tests: the f32 kernels must match the
// f64 references as closely at each as at 0.
inline constexpr double kOffsets[] = {0.0, 1e4, 1e8, 1e16, 1e30};

// n values offset + scale * u for u in [-3, 3) (test_values), rounded to f32,
// with scale = `ulps` f32 ulps of the offset but at least 1 (0: the offset
// alone): distinct values whose spread is small next to a large offset.
inline std::vector<float> offset_values(std::int64_t n, double offset, double ulps, std::uint64_t seed) {
  const float o = static_cast<float>(offset);
  const double ulp = static_cast<double>(std::nextafter(o, std::numeric_limits<float>::infinity()) - o);
  const double scale = ulps == 0 ? 0.0 : std::max(1.0, ulps * ulp);
  std::vector<float> v = test_values(n, seed, -3.0, 3.0);
  for (float& x : v) x = static_cast<float>(offset + scale * x);
  return v;
}

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Expects every value of rows `nan_rows` (rows of length L) to be NaN and every other value to be finite.
inline void expect_nan_rows(const std::vector<float>& v, std::int64_t L, std::initializer_list<std::int64_t> nan_rows, const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t r = static_cast<std::int64_t>(i) / L;
    const bool want_nan = std::find(nan_rows.begin(), nan_rows.end(), r) != nan_rows.end();
    EXPECT_EQ(std::isnan(v[i]), want_nan) << what << " [" << i << "] = " << v[i];
  }
}

// The semantic ops `f` records on the default engine.
inline std::vector<SemanticOp> traced(const std::function<void()>& f) {
  TraceCapture trace(Engine::default_engine());
  f();
  return trace.ops();
}

// Expects exactly the labelled ops with the given dispatch counts, in order.
inline void expect_trace(const std::vector<SemanticOp>& ops, const std::vector<std::pair<std::string, std::uint32_t>>& want) {
  ASSERT_EQ(ops.size(), want.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].label(), want[i].first) << "op " << i;
    EXPECT_EQ(ops[i].dispatches, want[i].second) << "op " << i << " " << ops[i].label();
  }
}

// Expects `f` to throw InvalidArgument naming `op` (and every fragment) and to record nothing.
inline void expect_invalid(const std::function<void()>& f, const char* op, std::initializer_list<const char*> fragments = {}) {
  const Engine engine = Engine::default_engine();
  engine.synchronize();  // storages of finished work return before counting
  TraceCapture trace(engine);
  const auto before = engine.memory_stats().live_storages;
  EXPECT_TRUE(oa_test::throws(f, ErrorKind::InvalidArgument, {op}));
  if (fragments.size()) {
    EXPECT_TRUE(oa_test::throws(f, ErrorKind::InvalidArgument, fragments));
  }
  EXPECT_TRUE(trace.ops().empty()) << "a failed call recorded work";
  engine.synchronize();
  EXPECT_EQ(engine.memory_stats().live_storages, before) << "a failed call left storage behind";
}

}  // namespace oa::nn_test
