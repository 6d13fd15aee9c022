// permute, transpose, slice, narrow and the reshaping views against the f64
// index references, with finite-difference gradients.
#include <gtest/gtest.h>

#include <limits>
#include <utility>
#include <vector>

#include "oa/oa.hpp"
#include "reference/layout.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using namespace oa::test::gradcheck_names;
namespace mx = oa::matrix;
namespace ref = oa::reference;

using oa_test::f64;

TEST(MatrixLayout, PermuteTraceAndIntegers) {
  // Negative axes; one semantic op with the normalised dims; i32 elements
  // (gradients of every rank: the op table, tests/ops/layout_ops.cpp).
  const Matrix x = Matrix::from_vector({2, 3, 4}, oa::test::test_values(24, 9));
  oa::TraceCapture trace(x.engine());
  const Matrix y = mx::permute(x, {-1, 0, -2});
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::permute");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(*ops[0].attribute("dims")), (std::vector<std::int64_t>{2, 0, 1}));
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::permute(f64(x.to_vector()), {2, 3, 4}, {2, 0, 1}), 0, 0));
  std::vector<std::int32_t> ints(24);
  for (int i = 0; i < 24; ++i) ints[static_cast<std::size_t>(i)] = i - 7;
  const auto yi = mx::permute(Matrix::from_i32({2, 3, 4}, ints), {1, 2, 0}).to_i32();
  const auto want = ref::permute(std::vector<double>(ints.begin(), ints.end()), {2, 3, 4}, {1, 2, 0});
  EXPECT_EQ(yi, std::vector<std::int32_t>(want.begin(), want.end()));
}

TEST(MatrixLayout, SliceTrace) {
  // Python slicing and its gradients: the op table (tests/ops/layout_ops.cpp).
  const Matrix x = Matrix::from_vector({4, 6}, oa::test::test_values(24, 41));
  oa::TraceCapture trace(x.engine());
  const Matrix y = mx::slice(x, 1, 1, -1, 2);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::slice");
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("stop")), 5);
  EXPECT_TRUE(y.shape() == Shape({4, 2}));
}

TEST(MatrixLayout, ReshapingViewsShareTheStorage) {
  const Matrix x = Matrix::from_vector({2, 1, 3, 1}, oa::test::test_values(6, 50));
  oa::TraceCapture trace(x.engine());
  EXPECT_TRUE(mx::squeeze(x).shape() == Shape({2, 3}));
  EXPECT_TRUE(mx::squeeze(x, 1).shape() == Shape({2, 3, 1}));
  EXPECT_TRUE(mx::squeeze(x, 0).shape() == x.shape());  // extent 2: unchanged, as torch.squeeze
  EXPECT_TRUE(mx::unsqueeze(x, 0).shape() == Shape({1, 2, 1, 3, 1}));
  EXPECT_TRUE(mx::unsqueeze(x, -1).shape() == Shape({2, 1, 3, 1, 1}));
  EXPECT_TRUE(mx::flatten(x).shape() == Shape({6}));
  EXPECT_TRUE(mx::flatten(x, 1, 2).shape() == Shape({2, 3, 1}));
  EXPECT_TRUE(mx::flatten(Matrix::full({}, 2.0f)).shape() == Shape({1}));
  EXPECT_TRUE(mx::unflatten(mx::flatten(x), 0, {3, -1}).shape() == Shape({3, 2}));
  EXPECT_TRUE(mx::unflatten(x, 2, {1, 3, 1}).shape() == Shape({2, 1, 1, 3, 1, 1}));
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(mx::squeeze(x).storage(), x.storage());
  // Gradients flow through the views.
  gradcheck({random_input({2, 6}, 51)},
            [](const std::vector<Matrix>& v) { return mx::unflatten(mx::unsqueeze(mx::flatten(v[0]), 0), 1, {3, 4}); },
            [](const Inputs& v) { return v[0]; });
}

TEST(MatrixLayout, BadArgumentsNameTheOpAndRecordNothing) {
  const Matrix x = Matrix::zeros({2, 3, 4});
  oa::TraceCapture trace(x.engine());
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { mx::permute(x, {0, 1}); }, ErrorKind::InvalidArgument, {"oa::matrix::permute", "0, 1", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::permute(x, {0, 1, 1}); }, ErrorKind::InvalidArgument, {"permutation"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::permute(x, {0, 1, 3}); }, ErrorKind::InvalidArgument, {"out of range"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::transpose(x, 0, 3); }, ErrorKind::InvalidArgument, {"oa::matrix::transpose", "dim1 3"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::slice(x, 1, 0, 2, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::slice", "step 0"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::slice(x, -4); }, ErrorKind::InvalidArgument, {"oa::matrix::slice", "axis -4"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::narrow(x, 2, 2, 3); }, ErrorKind::InvalidArgument, {"oa::matrix::narrow", "extent 4"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::unflatten(x, 1, {2, 2}); }, ErrorKind::InvalidArgument, {"oa::matrix::unflatten", "2, 2"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::flatten(x, 2, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::flatten", "start_dim"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::permute(Matrix(), {}); }, ErrorKind::InvalidArgument, {"oa::matrix::permute", "x"}));
  // The public op is named, not the one it is built on.
  EXPECT_TRUE(oa_test::throws([&] { mx::transpose(Matrix(), 0, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::transpose", "x"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::narrow(Matrix(), 0, 0, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::narrow", "x"}));
  // Ranges whose ends would overflow int64 are refused, not wrapped.
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  for (const auto& range : std::vector<std::pair<std::int64_t, std::int64_t>>{{2, kMax}, {-1, kMax}, {kMax, 1}}) {
    EXPECT_TRUE(oa_test::throws([&] { mx::narrow(x, 1, range.first, range.second); }, ErrorKind::InvalidArgument,
                                {"oa::matrix::narrow", "extent 3"}));
  }
  EXPECT_TRUE(oa_test::throws([&] { mx::unflatten(x, 1, {(std::int64_t{1} << 62) + 1, 4}); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::unflatten", "sizes"}));
  const Matrix rank8 = Matrix::zeros({1, 1, 1, 1, 1, 1, 1, 4});
  EXPECT_TRUE(oa_test::throws([&] { mx::unflatten(rank8, 7, {2, 2}); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::unflatten", "more axes", "[1, 1, 1, 1, 1, 1, 1, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::unsqueeze(x, 4); }, ErrorKind::InvalidArgument, {"oa::matrix::unsqueeze", "axis 4", "[-4, 3]"}));
  EXPECT_TRUE(trace.ops().empty());
}

TEST(MatrixLayout, StepsPastTheAxisAndZeroDimensionalInputsAsInPyTorch) {
  // A step longer than the range takes its first element alone (x[0:10:big]).
  const Matrix x = Matrix::from_vector({10}, oa::test::test_values(10, 60));
  const auto xs = x.to_vector();
  for (std::int64_t step : {std::int64_t{11}, std::int64_t{1} << 32, std::numeric_limits<std::int64_t>::max() - 8,
                            std::numeric_limits<std::int64_t>::max()}) {
    const Matrix y = mx::slice(x, 0, 1, {}, step);
    ASSERT_TRUE(y.shape() == Shape({1})) << step;
    EXPECT_EQ(y.to_vector()[0], xs[1]) << step;
  }
  // A step along an outer axis whose stride times the step passes 2^32 elements.
  const Matrix wide = Matrix::zeros({2, 1 << 22});
  EXPECT_TRUE(mx::slice(wide, 0, {}, {}, 1024).shape() == Shape({1, 1 << 22}));
  // A 0-d x takes axis 0 and -1 (torch.squeeze(s, 0), s.transpose(-1, 0)).
  const Matrix s = Matrix::full({}, 3.0f);
  EXPECT_TRUE(mx::squeeze(s, 0).shape() == Shape({}));
  EXPECT_TRUE(mx::transpose(s, 0, 0).shape() == Shape({}));
  EXPECT_EQ(mx::transpose(s, -1, 0).to_vector(), std::vector<float>{3.0f});
  EXPECT_TRUE(oa_test::throws([&] { mx::slice(s, 0); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::slice", "no axis"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::unflatten(s, 0, {1}); }, oa::ErrorKind::InvalidArgument, {"oa::matrix::unflatten", "no axis"}));
}

}  // namespace
