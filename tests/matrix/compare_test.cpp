// The comparisons eq, ne, lt, le, gt, ge against the f64 reference
// (reference/elementwise.hpp): NumPy broadcasting, NaN and signed zeros, i32
// operands, the scalar forms, traces (no gradient) and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "reference/elementwise.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::ErrorKind;
using oa::Matrix;
using oa::Shape;
namespace mx = oa::matrix;

struct Comparison {
  std::string name;
  std::function<Matrix(const Matrix&, const Matrix&)> op;
  std::function<Matrix(const Matrix&, float)> scalar;
};

const std::vector<Comparison>& comparisons() {
  static const std::vector<Comparison> all = {
      {"eq", [](const Matrix& a, const Matrix& b) { return mx::eq(a, b); }, [](const Matrix& a, float s) { return mx::eq(a, s); }},
      {"ne", [](const Matrix& a, const Matrix& b) { return mx::ne(a, b); }, [](const Matrix& a, float s) { return mx::ne(a, s); }},
      {"lt", [](const Matrix& a, const Matrix& b) { return mx::lt(a, b); }, [](const Matrix& a, float s) { return mx::lt(a, s); }},
      {"le", [](const Matrix& a, const Matrix& b) { return mx::le(a, b); }, [](const Matrix& a, float s) { return mx::le(a, s); }},
      {"gt", [](const Matrix& a, const Matrix& b) { return mx::gt(a, b); }, [](const Matrix& a, float s) { return mx::gt(a, s); }},
      {"ge", [](const Matrix& a, const Matrix& b) { return mx::ge(a, b); }, [](const Matrix& a, float s) { return mx::ge(a, s); }}};
  return all;
}

// Small integers as floats, so that many pairs tie, with NaN, both
// infinities and both zeros mixed in.
std::vector<float> tie_values(std::int64_t n, std::uint64_t seed) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  for (float x : oa::test::test_values(n, seed, -3, 3)) v.push_back(std::floor(x));
  const std::vector<float> special = {nan, inf, -inf, 0.0f, -0.0f};
  for (std::size_t i = 0; i < v.size(); i += 3) v[i] = special[(i / 3 + seed) % special.size()];
  return v;
}

using oa_test::f64;

TEST(MatrixCompare, BroadcastsLikeWhereAndMatchesTheReference) {
  struct Case {
    Shape a, b, out;
  };
  // Same shapes; a scalar; a row; two-sided broadcasts no contiguous run
  // describes; more than 4 elements a word at odd counts (partial last word).
  const std::vector<Case> cases = {{{3, 5}, {3, 5}, {3, 5}},     {{7}, {}, {7}},
                                   {{2, 3}, {3}, {2, 3}},        {{3, 1}, {1, 4}, {3, 4}},
                                   {{2, 1, 3}, {4, 1}, {2, 4, 3}}, {{1}, {2, 3, 1, 5}, {2, 3, 1, 5}},
                                   {{0, 3}, {3}, {0, 3}}};
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    const auto av = tie_values(c.a.numel(), seed), bv = tie_values(c.b.numel(), seed + 1);
    seed += 2;
    const Matrix a = Matrix::from_vector(c.a, av), b = Matrix::from_vector(c.b, bv);
    for (const auto& cmp : comparisons()) {
      SCOPED_TRACE(cmp.name + " " + c.a.to_string() + " " + c.b.to_string());
      const Matrix m = cmp.op(a, b);
      EXPECT_EQ(m.dtype(), oa::DType::Bool);
      EXPECT_EQ(m.shape(), c.out);
      EXPECT_EQ(m.to_bool(), ref::compare(cmp.name, f64(av), c.a.to_vector(), f64(bv), c.b.to_vector(), c.out.to_vector()));
    }
  }
}

TEST(MatrixCompare, NanComparesFalseExceptNeAndSignedZerosAreEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Matrix a = Matrix::from_vector({4}, std::vector<float>{nan, 1.0f, nan, -0.0f});
  const Matrix b = Matrix::from_vector({4}, std::vector<float>{1.0f, nan, nan, 0.0f});
  EXPECT_EQ(mx::eq(a, b).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(mx::ne(a, b).to_bool(), (std::vector<std::uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(mx::lt(a, b).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(mx::le(a, b).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(mx::gt(a, b).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(mx::ge(a, b).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 1}));
  // A NaN scalar: all false, all true under ne.
  EXPECT_EQ(mx::eq(a, nan).to_bool(), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(mx::ne(a, nan).to_bool(), (std::vector<std::uint8_t>{1, 1, 1, 1}));
}

TEST(MatrixCompare, ScalarFormsAndI32OperandsMatchTheReference) {
  const Shape s{3, 7};
  const auto av = tie_values(s.numel(), 20);
  const Matrix a = Matrix::from_vector(s, av);
  for (float v : {0.0f, -1.0f, 0.5f, std::numeric_limits<float>::infinity()}) {
    for (const auto& cmp : comparisons()) {
      SCOPED_TRACE(cmp.name + " " + std::to_string(v));
      EXPECT_EQ(cmp.scalar(a, v).to_bool(), ref::compare(cmp.name, f64(av), s.to_vector(), {v}, {}, s.to_vector()));
    }
  }
  // i32: exact beyond f32's 24-bit mantissa (16777217 vs 16777216 differ).
  const std::vector<std::int32_t> ai = {16777217, -5, 0, 7, INT32_MIN, INT32_MAX}, bi = {16777216, -5, 1, 7, INT32_MAX, INT32_MIN};
  std::vector<double> ad(ai.begin(), ai.end()), bd(bi.begin(), bi.end());
  for (const auto& cmp : comparisons()) {
    SCOPED_TRACE(cmp.name);
    EXPECT_EQ(cmp.op(Matrix::from_i32({2, 3}, ai), Matrix::from_i32({2, 3}, bi)).to_bool(),
              ref::compare(cmp.name, ad, {2, 3}, bd, {2, 3}, {2, 3}));
    // i32 broadcast: a column against a row.
    EXPECT_EQ(cmp.op(Matrix::from_i32({6, 1}, ai), Matrix::from_i32({6}, bi)).to_bool(),
              ref::compare(cmp.name, ad, {6, 1}, bd, {6}, {6, 6}));
  }
}

TEST(MatrixCompare, IsOneOpWithoutGradientAndTheMaskFeedsWhere) {
  const Matrix x = Matrix::from_vector({2, 3}, oa::test::test_values(6, 3));
  const Matrix row = Matrix::from_vector({3}, oa::test::test_values(3, 4));
  oa::set_requires_grad(x);
  oa::TraceCapture trace(x.engine());
  const Matrix same = mx::gt(x, x);
  const Matrix m = mx::lt(x, row);
  const Matrix s = mx::ge(x, 0.25f);
  EXPECT_FALSE(oa::requires_grad(m));
  EXPECT_FALSE(oa::requires_grad(s));
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 4u);  // gt, expand (of row), lt, ge
  EXPECT_EQ(ops[0].name, "oa::matrix::gt");
  EXPECT_EQ(ops[0].dispatches, 1u);
  EXPECT_EQ(ops[0].inputs.size(), 2u);
  EXPECT_EQ(ops[1].name, "oa::matrix::expand");
  EXPECT_EQ(ops[2].name, "oa::matrix::lt");
  EXPECT_EQ(ops[3].name, "oa::matrix::ge");
  EXPECT_EQ(ops[3].inputs.size(), 1u);
  EXPECT_EQ(std::get<double>(*ops[3].attribute("value")), 0.25);
  EXPECT_EQ(same.to_bool(), std::vector<std::uint8_t>(6, 0));
  // A mask from a comparison selects: relu written as where(x > 0, x, 0).
  const auto xv = x.to_vector();
  const auto r = mx::where(mx::gt(x, 0.0f), x, Matrix::zeros({})).to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(r[i], xv[i] > 0 ? xv[i] : 0.0f);
}

TEST(MatrixCompare, BadArgumentsNameTheOpAndRecordNothing) {
  const Matrix x = Matrix::zeros({2, 3});
  const Matrix i = Matrix::from_i32({2, 3}, std::vector<std::int32_t>(6, 0));
  const Matrix h = oa::matrix::cast(x, oa::DType::F16);
  const Matrix mask = Matrix::from_bool({2, 3}, std::vector<bool>(6, true));
  oa::TraceCapture trace(x.engine());
  EXPECT_TRUE(oa_test::throws([&] { mx::eq(x, Matrix::zeros({4})); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::eq", "do not broadcast", "a [2, 3]", "b [4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::lt(x, i); }, ErrorKind::InvalidArgument, {"oa::matrix::lt", "same dtype", "f32", "i32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::ge(h, h); }, ErrorKind::InvalidArgument, {"oa::matrix::ge", "a must be f32 or i32", "f16", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::ne(mask, mask); }, ErrorKind::InvalidArgument, {"oa::matrix::ne", "bool"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::gt(i, 0.5f); }, ErrorKind::InvalidArgument, {"oa::matrix::gt", "a must be f32", "i32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::le(Matrix(), x); }, ErrorKind::InvalidArgument, {"oa::matrix::le", "a"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::le(x, Matrix()); }, ErrorKind::InvalidArgument, {"oa::matrix::le", "b"}));
  EXPECT_TRUE(trace.ops().empty());
}

}  // namespace
