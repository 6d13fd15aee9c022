// Reductions against the f64 references.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "reference/reduction.hpp"

namespace {

using oa::Matrix;
using oa::Shape;

using oa_test::random_values;

// Runs f(x) and checks that it records exactly one semantic op named `name`.
Matrix traced(const std::string& name, const std::function<Matrix()>& f) {
  oa::TraceCapture trace(oa::Engine::default_engine());
  Matrix y = f();
  const auto ops = trace.ops();
  EXPECT_EQ(ops.size(), 1u);
  if (!ops.empty()) {
    EXPECT_EQ(ops[0].name, name);
  }
  return y;
}

void check_rows(std::int64_t rows, std::int64_t length, std::uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "rows " << rows << " length " << length);
  const auto x = random_values(rows * length, seed);
  const Matrix mx = Matrix::from_vector({rows, length}, x);
  std::vector<double> magnitude;
  const auto sums = oa::reference::row_sums(x, rows, length, &magnitude);
  std::vector<std::int32_t> index;
  const auto maxima = oa::reference::row_max(x, rows, length, &index);

  const auto s = traced("oa::matrix::sum", [&] { return oa::matrix::sum(mx); });
  const auto m = traced("oa::matrix::mean", [&] { return oa::matrix::mean(mx, true); });
  const auto mx_ = traced("oa::matrix::max", [&] { return oa::matrix::max(mx); });
  const auto am = traced("oa::matrix::argmax", [&] { return oa::matrix::argmax(mx); });
  EXPECT_EQ(s.shape(), Shape({rows}));
  EXPECT_EQ(m.shape(), Shape({rows, 1}));
  EXPECT_EQ(am.dtype(), oa::DType::I32);
  const auto gs = s.to_vector(), gm = m.to_vector(), gx = mx_.to_vector();
  const auto gi = am.to_i32();
  for (std::int64_t r = 0; r < rows; ++r) {
    ASSERT_NEAR(gs[r], sums[r], 1e-6 * magnitude[r] + 1e-6) << "row " << r;
    ASSERT_NEAR(gm[r], sums[r] / length, (1e-6 * magnitude[r] + 1e-6) / length) << "row " << r;
    ASSERT_EQ(gx[r], static_cast<float>(maxima[r])) << "row " << r;
    ASSERT_EQ(gi[r], index[r]) << "row " << r;
  }
}

TEST(MatrixReduction, RowLengths) {
  std::uint32_t seed = 1;
  for (std::int64_t length : {1, 7, 33, 129, 512, 513, 4096, 4097, 10000}) check_rows(3, length, seed++);
}

TEST(MatrixReduction, SeventyThousandRows) { check_rows(70000, 3, 50); }

TEST(MatrixReduction, GridPastWorkgroupLimit) {
  // Short rows go 8 to a workgroup: 600000 rows need more workgroups than one
  // grid dimension holds (65535 on most devices); the engine splits the grid.
  const std::int64_t rows = 600000;
  std::vector<float> x(rows * 2);
  for (std::int64_t r = 0; r < rows; ++r) {
    x[2 * r] = static_cast<float>(r % 1000);
    x[2 * r + 1] = 0.5f;
  }
  const Matrix mx = Matrix::from_vector({rows, 2}, x);
  oa::TraceCapture trace(mx.engine());
  const auto got = oa::matrix::sum(mx).to_vector();
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  const std::uint64_t limit = mx.engine().device().max_workgroup_count[0];
  EXPECT_EQ(ops[0].dispatches, (rows / 8 + limit - 1) / limit);
  for (std::int64_t r = 0; r < rows; ++r) ASSERT_EQ(got[r], static_cast<float>(r % 1000) + 0.5f) << "row " << r;
}

TEST(MatrixReduction, PastStorageBufferRange) {
  // 2^25 + 1024 ones (134 MB): more than lavapipe's 128 MiB maxStorageBufferRange,
  // so the first pass binds the input in several windows. The sum is exact in f32.
  const std::int64_t n = (std::int64_t{1} << 25) + 1024;
  const Matrix x = Matrix::ones({n});
  oa::TraceCapture trace(x.engine());
  EXPECT_EQ(oa::matrix::sum_all(x).item(), static_cast<float>(n));
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  // Three passes (8193 segments, then 3, then 1); the first in two windows where the range is short.
  EXPECT_EQ(ops[0].dispatches, x.engine().device().max_storage_buffer_range < static_cast<std::uint64_t>(n) * 4 ? 4u : 3u);
}

TEST(MatrixReduction, MultiPassOverLongRow) {
  // 2^20 + 5 elements: three passes of segments.
  const std::int64_t n = (1 << 20) + 5;
  auto x = random_values(n, 60);
  x[700000] = 3.0f;  // the maximum, twice: argmax gives the first
  x[900001] = 3.0f;
  const Matrix mx = Matrix::from_vector({n}, x);
  std::vector<double> magnitude;
  const auto sum = oa::reference::row_sums(x, 1, n, &magnitude)[0];
  const auto s = traced("oa::matrix::sum", [&] { return oa::matrix::sum_all(mx); });
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_NEAR(s.item(), sum, 1e-6 * magnitude[0]);
  const auto m = traced("oa::matrix::mean", [&] { return oa::matrix::mean_all(mx); });
  EXPECT_NEAR(m.item(), sum / n, 1e-6 * magnitude[0] / n);
  const auto mm = traced("oa::matrix::max", [&] { return oa::matrix::max_all(mx); });
  EXPECT_EQ(mm.item(), 3.0f);
  const auto am = oa::matrix::argmax(mx);
  EXPECT_EQ(am.shape(), Shape{});
  EXPECT_EQ(am.to_i32(), std::vector<std::int32_t>{700000});
}

TEST(MatrixReduction, NanAndTies) {
  const float nan = std::nanf("");
  const Matrix x = Matrix::from_vector({3, 4}, std::vector<float>{1, 5, 5, 2, 1, nan, 9, nan, -INFINITY, -INFINITY, -INFINITY, -INFINITY});
  const auto mx = oa::matrix::max(x).to_vector();
  EXPECT_EQ(mx[0], 5.0f);
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -INFINITY);
  EXPECT_EQ(oa::matrix::argmax(x, true).to_i32(), (std::vector<std::int32_t>{1, 1, 0}));
  EXPECT_EQ(oa::matrix::argmax(x, true).shape(), Shape({3, 1}));
}

// The NaN rule of every max reduction (shaders/common/reduce.glsl): a NaN is
// the maximum and argmax gives the first NaN, whichever invocation, subgroup,
// segment or pass holds it: short rows (32 lanes a row), long rows (256
// lanes, several subgroups) and rows past one segment (two passes, argmax
// carrying pairs).
TEST(MatrixReduction, NanIsTheMaximumOnEveryPath) {
  const float nan = std::nanf("");
  for (std::int64_t length : {20, 1000, 9000}) {
    SCOPED_TRACE(testing::Message() << "length " << length);
    const std::int64_t rows = 4;
    auto x = random_values(rows * length, 70);
    x[length - 1] = nan;                      // row 0: the last element
    x[length + length / 2] = nan;             // row 1: two NaNs and an inf; the first NaN wins
    x[length + length - 2] = nan;
    x[length + 1] = INFINITY;
    x[3 * length] = nan;                      // row 3: the first element, next to a larger value
    x[3 * length + 1] = 5.0f;
    const Matrix mx = Matrix::from_vector({rows, length}, x);
    std::vector<std::int32_t> index;
    const auto want = oa::reference::row_max(x, rows, length, &index);
    EXPECT_TRUE(oa_test::near(oa::matrix::max(mx).to_vector(), want, 0.0, 0.0));
    EXPECT_EQ(oa::matrix::argmax(mx).to_i32(), index);
    EXPECT_TRUE(std::isnan(oa::matrix::max_all(mx).item()));
    EXPECT_TRUE(std::isnan(oa::matrix::max_all(Matrix::from_vector({length}, std::vector<float>(x.begin() + length, x.begin() + 2 * length))).item()));
  }
}

// argmin on every path of argmax (one segment, several subgroups, two
// passes): the first minimum, ties to the lower index, a NaN as the minimum.
TEST(MatrixReduction, ArgminGivesTheFirstMinimumOnEveryPath) {
  const float nan = std::nanf("");
  for (std::int64_t length : {1, 20, 1000, 9000}) {
    SCOPED_TRACE(testing::Message() << "length " << length);
    const std::int64_t rows = 4;
    auto x = random_values(rows * length, 80);
    if (length > 1) {
      x[length / 2] = -2.0f;  // row 0: the minimum twice; the first wins
      x[length - 1] = -2.0f;
      x[length + length - 1] = nan;  // row 1: a NaN after a smaller value
      x[length] = -INFINITY;
      for (std::int64_t j = 0; j < length; ++j) x[2 * length + j] = std::abs(x[2 * length + j]) + 1.0f;
      x[2 * length] = 0.0f;  // row 2: +0 then -0, the minima, tie: the first wins
      x[2 * length + 1] = -0.0f;
    }
    const Matrix mx = Matrix::from_vector({rows, length}, x);
    const auto am = traced("oa::matrix::argmin", [&] { return oa::matrix::argmin(mx); });
    EXPECT_EQ(am.dtype(), oa::DType::I32);
    EXPECT_EQ(am.to_i32(), oa::reference::row_argmin(x, rows, length));
  }
  EXPECT_EQ(oa::matrix::argmin(Matrix::from_vector({2, 3}, std::vector<float>{3, 1, 1, 4, 5, -6}), true).to_i32(),
            (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(oa::matrix::argmin(Matrix::zeros({2, 3}), true).shape(), Shape({2, 1}));
}

TEST(MatrixReduction, EmptyAxes) {
  const Matrix x = Matrix::zeros({3, 0});
  EXPECT_EQ(oa::matrix::sum(x).to_vector(), std::vector<float>(3, 0.0f));
  for (float v : oa::matrix::mean(x).to_vector()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(oa::matrix::sum_all(x).item(), 0.0f);
  EXPECT_EQ(oa::matrix::sum(Matrix::zeros({0, 4})).shape(), Shape({0}));
  oa::TraceCapture trace(x.engine());
  const std::pair<const char*, Matrix (*)(const Matrix&)> failing[] = {
      {"oa::matrix::max:", [](const Matrix& m) { return oa::matrix::max(m); }},
      {"oa::matrix::argmax:", [](const Matrix& m) { return oa::matrix::argmax(m); }},
      {"oa::matrix::argmin:", [](const Matrix& m) { return oa::matrix::argmin(m); }},
      {"oa::matrix::max:", [](const Matrix& m) { return oa::matrix::max_all(m); }},
      {"oa::matrix::min:", [](const Matrix& m) { return oa::matrix::min(m, {1}); }},
      {"oa::matrix::norm:", [](const Matrix& m) { return oa::matrix::norm(m, INFINITY, {-1}); }}};
  for (const auto& [name, f] : failing) {
    try {
      f(x);
      ADD_FAILURE() << "expected an error from " << name;
    } catch (const oa::Error& e) {
      EXPECT_EQ(e.kind(), oa::ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(oa::matrix::mean(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2})), oa::Error);  // torch: no integer mean
  EXPECT_TRUE(trace.ops().empty());
  // Reductions with an identity over empty axes, as PyTorch.
  EXPECT_EQ(oa::matrix::prod(x, {1}).to_vector(), std::vector<float>(3, 1.0f));
  EXPECT_EQ(oa::matrix::norm(x, 2.0f, {1}).to_vector(), std::vector<float>(3, 0.0f));
  for (float v : oa::matrix::logsumexp(x, {1}).to_vector()) EXPECT_EQ(v, -INFINITY);
  for (float v : oa::matrix::var(x, {1}).to_vector()) EXPECT_TRUE(std::isnan(v));
}

TEST(MatrixReduction, IntegerSumsAreExactInt32) {
  // Past 2^24, where an f32 sum would round: 2^24 + 1 + 1 + ... over a row of
  // 9000 (several segments: the partial sums are int32 too).
  std::vector<std::int32_t> v(9000, 1);
  v[0] = 1 << 24;
  v[8999] = -3;
  const Matrix x = Matrix::from_i32({1, 9000}, v);
  const Matrix s = traced("oa::matrix::sum", [&] { return oa::matrix::sum(x, {1}); });
  EXPECT_EQ(s.dtype(), oa::DType::I32);
  EXPECT_EQ(s.to_i32(), std::vector<std::int32_t>{(1 << 24) + 8998 - 3});
  EXPECT_EQ(oa::matrix::sum(Matrix::from_i32({2, 0}, std::vector<std::int32_t>{}), {1}).to_i32(), (std::vector<std::int32_t>{0, 0}));
  // bool counts as int32: over a moved axis too.
  const Matrix b = Matrix::from_bool({3, 2}, std::vector<std::uint8_t>{1, 0, 1, 1, 0, 1});
  EXPECT_EQ(oa::matrix::sum(b, {0}).to_i32(), (std::vector<std::int32_t>{2, 2}));
  EXPECT_EQ(oa::matrix::sum_all(b).dtype(), oa::DType::I32);
  EXPECT_EQ(oa::matrix::sum_all(b).to_i32(), std::vector<std::int32_t>{4});
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::mean(b, {0}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::mean", "bool"}));
}

// Integer and bool reductions over one set of axes of x.
struct IntegerAxes {
  Shape shape;
  std::vector<int> dims;
  bool keepdim;
};
// Every axis, the last (keepdim), rows of several segments (4096 items
// each), a long single row, a moved middle axis, two reduced runs (keepdim),
// a leading axis of odd rows, rank 0, no rows.
const std::vector<IntegerAxes> kIntegerAxes = {
    {{7}, {}, false},        {{3, 5}, {-1}, true},          {{2, 9000}, {1}, false}, {{4097}, {0}, false},
    {{3, 1030, 2}, {1}, false}, {{2, 3, 4, 5}, {0, 2}, true}, {{5, 3}, {0}, false},   {{}, {}, false},
    {{0, 5}, {1}, false}};

std::vector<std::int64_t> integer_dims(const IntegerAxes& a) {
  return oa::reference::normal_axes(static_cast<std::int64_t>(a.shape.rank()), a.dims);
}

// The shape of reducing `a`.
Shape integer_reduced(const IntegerAxes& a) {
  const auto dims = integer_dims(a);
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < a.shape.rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(d)) == dims.end()) out.push_back(a.shape[d]);
    else if (a.keepdim) out.push_back(1);
  }
  return Shape(out);
}

// n int32 values: with `ties`, in [-3, 3] (many equal extremes); otherwise
// over the whole int32 range (odd values past 2^24, which f32 rounds), with
// INT32_MIN, INT32_MAX and 2^24 + 1 among them.
std::vector<std::int32_t> exact_ints(std::int64_t n, std::uint32_t seed, bool ties) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> dist(ties ? -3 : INT32_MIN, ties ? 3 : INT32_MAX);
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = dist(gen);
  if (!ties && n > 3) {
    v[static_cast<std::size_t>(n / 3)] = INT32_MIN;
    v[static_cast<std::size_t>(n / 2)] = INT32_MAX;
    v.back() = (1 << 24) + 1;
  }
  return v;
}

double fold_int_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double fold_int_min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double fold_count(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

TEST(MatrixReduction, IntegerMaxAndMinAreExact) {
  std::uint32_t seed = 300;
  for (bool ties : {false, true})
    for (const IntegerAxes& a : kIntegerAxes) {
      SCOPED_TRACE(testing::Message() << "x " << a.shape.to_string() << " dims " << testing::PrintToString(a.dims) << " ties " << ties);
      const auto v = exact_ints(a.shape.numel(), seed++, ties);
      const Matrix x = Matrix::from_i32(a.shape, v);
      const std::vector<double> xd(v.begin(), v.end());
      for (bool largest : {true, false}) {
        const Matrix y = traced(largest ? "oa::matrix::max" : "oa::matrix::min",
                                [&] { return largest ? oa::matrix::max(x, a.dims, a.keepdim) : oa::matrix::min(x, a.dims, a.keepdim); });
        EXPECT_EQ(y.dtype(), oa::DType::I32);
        EXPECT_EQ(y.shape(), integer_reduced(a));
        const auto ref = oa::reference::reduce_axes(xd, a.shape.to_vector(), integer_dims(a), largest ? fold_int_max : fold_int_min);
        const auto got = y.to_i32();
        ASSERT_EQ(got.size(), ref.size());
        for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<std::int32_t>(ref[i])) << (largest ? "max " : "min ") << i;
      }
    }
}

// The product of int32 values wrapped modulo 2^32, as int32 multiplication
// (computed in uint32, where wrapping is defined).
double fold_wrapped_product(const std::vector<double>& v) {
  std::uint32_t p = 1;
  for (double e : v) p *= static_cast<std::uint32_t>(static_cast<std::int32_t>(e));
  return static_cast<double>(static_cast<std::int32_t>(p));
}

TEST(MatrixReduction, IntegerProductsAreExactAndWrapInInt32) {
  std::uint32_t seed = 350;
  // Small factors (negative, with a zero in some rows: products that stay in
  // range, or wrap over long rows) and factors over the whole int32 range
  // (each row's product wraps).
  for (int kind : {0, 1, 2})
    for (const IntegerAxes& a : kIntegerAxes) {
      SCOPED_TRACE(testing::Message() << "x " << a.shape.to_string() << " dims " << testing::PrintToString(a.dims) << " kind " << kind);
      std::vector<std::int32_t> v = exact_ints(a.shape.numel(), seed++, kind < 2);
      if (kind < 2)
        for (std::size_t k = 0; k < v.size(); ++k)
          if (v[k] == 0 && (kind == 0 || k % 7 != 0)) v[k] = k % 2 == 0 ? 1 : -1;  // kind 1 keeps some zeros
      const Matrix x = Matrix::from_i32(a.shape, v);
      const Matrix y = traced("oa::matrix::prod", [&] { return oa::matrix::prod(x, a.dims, a.keepdim); });
      EXPECT_EQ(y.dtype(), oa::DType::I32);
      EXPECT_EQ(y.shape(), integer_reduced(a));
      const auto ref = oa::reference::reduce_axes(std::vector<double>(v.begin(), v.end()), a.shape.to_vector(), integer_dims(a),
                                                  fold_wrapped_product);
      const auto got = y.to_i32();
      ASSERT_EQ(got.size(), ref.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<std::int32_t>(ref[i])) << "prod " << i;
    }
  // Exact where f32 would round: 3^19 = 1162261467 (past 2^24), times -1.
  std::vector<std::int32_t> threes(19, 3);
  threes.push_back(-1);
  EXPECT_EQ(oa::matrix::prod(Matrix::from_i32({20}, threes), {0}).to_i32(), std::vector<std::int32_t>{-1162261467});
  // 2^16 * 2^16 wraps to 0; 65537 * 65537 = 2^32 + 2^17 + 1 wraps to 2^17 + 1.
  EXPECT_EQ(oa::matrix::prod(Matrix::from_i32({2, 2}, std::vector<std::int32_t>{65536, 65536, 65537, 65537}), {1}).to_i32(),
            (std::vector<std::int32_t>{0, (1 << 17) + 1}));
  // bool: int32 1 where every element holds (torch gives int64), over empty axes 1.
  const Matrix b = Matrix::from_bool({3, 2}, std::vector<std::uint8_t>{1, 1, 1, 0, 0, 0});
  const Matrix pb = traced("oa::matrix::prod", [&] { return oa::matrix::prod(b, {1}); });
  EXPECT_EQ(pb.dtype(), oa::DType::I32);
  EXPECT_EQ(pb.to_i32(), (std::vector<std::int32_t>{1, 0, 0}));
  EXPECT_EQ(oa::matrix::prod(Matrix::from_bool({2, 0}, std::vector<std::uint8_t>{}), {1}).to_i32(), (std::vector<std::int32_t>{1, 1}));
}

TEST(MatrixReduction, IntegerArgExtremesGiveTheFirstIndex) {
  struct Along {
    Shape shape;
    int dim;
    bool keepdim;
  };
  // The last axis (short, several segments, a multi-pass single row), moved
  // axes (a middle one, a leading one of odd rows), no rows.
  const std::vector<Along> along = {{{3, 5}, -1, true}, {{2, 9000}, 1, false}, {{10000}, 0, false},
                                    {{3, 1030, 2}, 1, false}, {{5, 3}, 0, false}, {{0, 4}, 1, false}};
  std::uint32_t seed = 400;
  for (bool ties : {false, true})
    for (const Along& a : along) {
      SCOPED_TRACE(testing::Message() << "x " << a.shape.to_string() << " dim " << a.dim << " ties " << ties);
      const auto v = exact_ints(a.shape.numel(), seed++, ties);
      const Matrix x = Matrix::from_i32(a.shape, v);
      const std::vector<double> xd(v.begin(), v.end());
      const auto axis = static_cast<std::int64_t>(a.dim < 0 ? a.dim + static_cast<int>(a.shape.rank()) : a.dim);
      for (bool largest : {true, false}) {
        const Matrix y = traced(largest ? "oa::matrix::argmax" : "oa::matrix::argmin", [&] {
          return largest ? oa::matrix::argmax(x, a.dim, a.keepdim) : oa::matrix::argmin(x, a.dim, a.keepdim);
        });
        EXPECT_EQ(y.dtype(), oa::DType::I32);
        const auto ref = oa::reference::reduce_axes(xd, a.shape.to_vector(), {axis}, [largest](const std::vector<double>& g) {
          return static_cast<double>((largest ? std::max_element(g.begin(), g.end()) : std::min_element(g.begin(), g.end())) - g.begin());
        });
        const auto got = y.to_i32();
        ASSERT_EQ(got.size(), ref.size());
        for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<std::int32_t>(ref[i])) << (largest ? "argmax " : "argmin ") << i;
      }
    }
  // INT32_MIN has no int32 negation: argmin still finds it (the kernel reads ~x).
  const Matrix m = Matrix::from_i32({4}, std::vector<std::int32_t>{5, INT32_MIN, INT32_MIN, INT32_MAX});
  EXPECT_EQ(oa::matrix::argmin(m).to_i32(), std::vector<std::int32_t>{1});
  EXPECT_EQ(oa::matrix::argmax(m).to_i32(), std::vector<std::int32_t>{3});
}

TEST(MatrixReduction, BoolReductionsReadBytes) {
  std::uint32_t seed = 500;
  for (const IntegerAxes& a : kIntegerAxes)
    for (int density : {0, 1, 2}) {  // all false, mixed, all true
      SCOPED_TRACE(testing::Message() << "x " << a.shape.to_string() << " dims " << testing::PrintToString(a.dims) << " density " << density);
      std::mt19937 gen(seed++);
      std::vector<std::uint8_t> v(static_cast<std::size_t>(a.shape.numel()));
      for (auto& e : v) e = density == 1 ? static_cast<std::uint8_t>(gen() % 2) : static_cast<std::uint8_t>(density / 2);
      const Matrix x = Matrix::from_bool(a.shape, v);
      const std::vector<double> xd(v.begin(), v.end());
      const auto dims = integer_dims(a);
      const Matrix s = traced("oa::matrix::sum", [&] { return oa::matrix::sum(x, a.dims, a.keepdim); });
      EXPECT_EQ(s.dtype(), oa::DType::I32);
      EXPECT_EQ(s.shape(), integer_reduced(a));
      const auto count = oa::reference::reduce_axes(xd, a.shape.to_vector(), dims, fold_count);
      const auto got = s.to_i32();
      ASSERT_EQ(got.size(), count.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<std::int32_t>(count[i])) << "sum " << i;
      for (bool largest : {true, false}) {  // torch.amax / amin of bool: any, all
        const Matrix y = traced(largest ? "oa::matrix::max" : "oa::matrix::min",
                                [&] { return largest ? oa::matrix::max(x, a.dims, a.keepdim) : oa::matrix::min(x, a.dims, a.keepdim); });
        EXPECT_EQ(y.dtype(), oa::DType::Bool);
        EXPECT_EQ(y.shape(), integer_reduced(a));
        const auto ref = oa::reference::reduce_axes(xd, a.shape.to_vector(), dims, largest ? fold_int_max : fold_int_min);
        const auto bits = y.to_bool();
        ASSERT_EQ(bits.size(), ref.size());
        for (std::size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(bits[i], static_cast<std::uint8_t>(ref[i])) << (largest ? "max " : "min ") << i;
      }
    }
}

TEST(MatrixReduction, BoolSumMakesNoInt32Copy) {
  // 2^20 bools: an int32 copy would take 4 MiB; the trailing sum reads the
  // bytes in place, the moved one copies them as bytes.
  const std::int64_t n = 1 << 20;
  const Matrix x = Matrix::from_bool({1024, 1024}, std::vector<std::uint8_t>(static_cast<std::size_t>(n), 1));
  oa::Engine engine = x.engine();
  for (int axis : {1, 0}) {
    SCOPED_TRACE(testing::Message() << "axis " << axis);
    engine.synchronize();
    engine.reset_peak_memory();
    const auto before = engine.memory_stats().in_use_bytes;
    const Matrix s = oa::matrix::sum(x, {axis});
    EXPECT_EQ(s.to_i32(), std::vector<std::int32_t>(1024, 1024));
    EXPECT_LT(engine.memory_stats().peak_in_use_bytes - before, static_cast<std::uint64_t>(2 * n));
  }
}

TEST(MatrixReduction, IntegerAndBoolErrors) {
  const Matrix b = Matrix::from_bool({2, 3}, std::vector<std::uint8_t>{1, 0, 1, 1, 0, 1});
  const Matrix i = Matrix::from_i32({2, 0}, std::vector<std::int32_t>{});
  oa::TraceCapture trace(b.engine());
  const auto invalid = oa::ErrorKind::InvalidArgument;
  // torch implements no argmax / argmin of bool.
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::argmax(b, 1); }, invalid, {"oa::matrix::argmax", "x", "bool", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::argmin(b, 0); }, invalid, {"oa::matrix::argmin", "x", "bool", "[2, 3]"}));
  // No identity for max or min over empty axes, whatever the dtype.
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::max(i, {1}); }, invalid, {"oa::matrix::max", "[2, 0]", "empty"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::min(Matrix::from_bool({0}, std::vector<std::uint8_t>{}), {0}); }, invalid,
                              {"oa::matrix::min", "[0]", "empty"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::argmax(i, 1); }, invalid, {"oa::matrix::argmax", "empty", "[2, 0]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::mean(i, {0}); }, invalid, {"oa::matrix::mean", "x", "i32", "[2, 0]"}));
  EXPECT_TRUE(trace.ops().empty());
  // No gradient: an integer leaf cannot require one, so nothing is recorded.
  EXPECT_TRUE(oa_test::throws([&] { oa::set_requires_grad(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2})); }, invalid,
                              {"oa::set_requires_grad", "f32"}));
  EXPECT_FALSE(oa::requires_grad(oa::matrix::max(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2}), {0})));
}

TEST(MatrixReduction, AxesAndErrors) {
  // A rank-0 x reduces to itself; an empty dim list reduces every axis.
  EXPECT_EQ(oa::matrix::sum(Matrix::full({}, 2.0f)).item(), 2.0f);
  const Matrix x = Matrix::from_vector({2, 3}, std::vector<float>{1, -2, 3, 4, 5, -6});
  EXPECT_EQ(oa::matrix::sum(x, {}).item(), 5.0f);
  EXPECT_EQ(oa::matrix::sum(x, {0}, true).shape(), Shape({1, 3}));
  EXPECT_EQ(oa::matrix::sum(x, {0}).to_vector(), (std::vector<float>{5, 3, -3}));
  EXPECT_EQ(oa::matrix::min(x, {-1}).to_vector(), (std::vector<float>{-2, -6}));
  EXPECT_EQ(oa::matrix::prod(x, {0}).to_vector(), (std::vector<float>{4, -10, -18}));
  EXPECT_EQ(oa::matrix::norm(x, 1.0f).item(), 21.0f);
  // NaN propagates through max and min over any axes.
  const Matrix n = Matrix::from_vector({2, 2}, std::vector<float>{1, NAN, 2, 3});
  EXPECT_TRUE(std::isnan(oa::matrix::min(n, {0}).to_vector()[1]));
  EXPECT_TRUE(std::isnan(oa::matrix::max(n, {0}).to_vector()[1]));
  // logsumexp of -inf is -inf, of +inf is +inf; no overflow for large values.
  const auto l = oa::matrix::logsumexp(Matrix::from_vector({3, 2}, std::vector<float>{-INFINITY, -INFINITY, INFINITY, 1, 1000, 1000}), {1}).to_vector();
  EXPECT_EQ(l[0], -INFINITY);
  EXPECT_EQ(l[1], INFINITY);
  EXPECT_NEAR(l[2], 1000 + std::log(2.0), 1e-3);
  oa::TraceCapture trace(x.engine());
  const auto live = x.engine().memory_stats().live_storages;
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::sum(x, {2}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::sum", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::var(x, {1, -1}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::var", "twice"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::norm(x, 3.0f); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::norm", "p 3"}));
  const auto invalid = oa::ErrorKind::InvalidArgument;
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::argmax(x, 2); }, invalid, {"oa::matrix::argmax", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::argmin(x, -3); }, invalid, {"oa::matrix::argmin", "dim -3", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::ml::softmax(x, 2); }, invalid, {"oa::ml::softmax", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::ml::log_softmax(Matrix::full({}, 1.0f), 0); }, invalid, {"oa::ml::log_softmax", "rank 0"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::cumsum(x, 2); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::cumsum", "dim 2"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::sum_to(x, Shape{2}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::sum_to", "[2, 3]", "[2]"}));
  EXPECT_TRUE(oa_test::throws([&] { (void)oa::matrix::mean(Matrix(), {0}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::mean"}));
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(x.engine().memory_stats().live_storages, live);
}

void check_sum_to(const Shape& xs, const Shape& target, std::uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "x " << xs.to_string() << " target " << target.to_string());
  const auto x = random_values(xs.numel(), seed);
  const Matrix mx = Matrix::from_vector(xs, x);
  const auto y = traced("oa::matrix::sum_to", [&] { return oa::matrix::sum_to(mx, target); });
  EXPECT_EQ(y.shape(), target);
  std::vector<float> ax(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) ax[i] = std::abs(x[i]);
  const auto ref = oa::reference::sum_to(x, xs.to_vector(), target.to_vector());
  const auto mag = oa::reference::sum_to(ax, xs.to_vector(), target.to_vector());
  const auto got = y.to_vector();
  ASSERT_EQ(got.size(), ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-6 * mag[i] + 1e-6) << "element " << i;
}

TEST(MatrixReduction, SumToBroadcastTargets) {
  check_sum_to({5, 7}, {7}, 1);           // trailing row
  check_sum_to({5, 7}, {1, 7}, 2);
  check_sum_to({5, 7}, {5, 1}, 3);        // per-row
  check_sum_to({2, 3, 5, 7}, {3, 1, 1}, 4);  // per-channel of NCHW
  check_sum_to({2, 3, 5, 7}, {1, 3, 1, 1}, 5);
  check_sum_to({3, 5, 7}, {3, 1, 1}, 6);  // leading channel: rows only
  check_sum_to({2, 3, 4}, {}, 7);         // scalar
  check_sum_to({2, 3, 4}, {1}, 8);
  check_sum_to({2, 3, 4}, {2, 3, 4}, 9);  // identity
  check_sum_to({2, 1, 4}, {2, 1, 4}, 10);
  check_sum_to({600, 33}, {33}, 11);      // column sums over several row blocks
  check_sum_to({70000, 3}, {3}, 12);
  check_sum_to({4, 300, 65}, {300, 1}, 13);  // rows then columns
  check_sum_to({0, 3}, {3}, 14);          // nothing to sum: zeros
}

TEST(MatrixReduction, SumToRejectsOtherTargets) {
  const Matrix x = Matrix::zeros({4, 3});
  for (const Shape& t : {Shape{4}, Shape{2, 3}, Shape{1, 4, 3}, Shape{3, 4}}) {
    try {
      oa::matrix::sum_to(x, t);
      ADD_FAILURE() << "expected an error for target " << t.to_string();
    } catch (const oa::Error& e) {
      EXPECT_EQ(e.kind(), oa::ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("oa::matrix::sum_to"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

// var and std where the mean is large against the spread: 0 and 1 around
// 1e6 (every value exact in f32), whose f32 mean is off by a fraction of a
// unit; the corrected two-pass sums take that error out. Over the last axis,
// over the first (a permuted copy), unbiased and population; and the n <=
// correction cases stay NaN (0 / 0) and inf.
TEST(MatrixReduction, VarianceIsExactAroundALargeMean) {
  constexpr std::int64_t n = 4096;
  std::vector<float> rows(2 * n), cols(2 * n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < 2; ++r) {
      const float v = 1e6f + static_cast<float>((i + r) % 2) + static_cast<float>(r) * 1000.0f;
      rows[r * n + i] = v;
      cols[i * 2 + r] = v;
    }
  const double population = 0.25, unbiased = 0.25 * n / (n - 1);
  const Matrix a = Matrix::from_vector({2, n}, rows), b = Matrix::from_vector({n, 2}, cols);
  for (const auto& [got, want] : std::vector<std::pair<Matrix, double>>{{oa::matrix::var(a, {1}), unbiased},
                                                                         {oa::matrix::var(b, {0}), unbiased},
                                                                         {oa::matrix::var(a, {1}, 0.0f), population},
                                                                         {oa::matrix::std(b, {0}, 0.0f), std::sqrt(population)}})
    for (const float v : got.to_vector()) EXPECT_NEAR(v, want, 1e-5 * want);
  EXPECT_TRUE(std::isnan(oa::matrix::var(Matrix::from_vector({1}, std::vector<float>{5.0f}), {0}).item()));
  EXPECT_EQ(oa::matrix::var(Matrix::from_vector({2}, std::vector<float>{1.0f, 2.0f}), {0}, 2.0f).item(), std::numeric_limits<float>::infinity());
}
