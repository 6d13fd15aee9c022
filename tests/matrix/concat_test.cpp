// concat and chunk against the f64 reference; trace and errors.
#include <gtest/gtest.h>

#include "oa/oa.hpp"
#include "reference/concat.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::Matrix;
using oa::Shape;

std::vector<float> values(std::int64_t n, float start) { return oa_test::iota(static_cast<std::size_t>(n), start, 0.5f); }

TEST(MatrixConcat, AlongEveryAxisWithOddExtents) {
  const std::vector<std::int64_t> base{3, 5, 7};
  for (std::size_t axis = 0; axis < base.size(); ++axis) {
    SCOPED_TRACE(testing::Message() << "axis " << axis);
    std::vector<std::vector<std::int64_t>> shapes;
    std::vector<std::vector<float>> data;
    std::vector<Matrix> xs;
    for (std::int64_t extent : {2, 1, 5}) {
      auto s = base;
      s[axis] = extent;
      shapes.push_back(s);
      data.push_back(values(Shape(s).numel(), static_cast<float>(100 * xs.size())));
      xs.push_back(Matrix::from_vector(Shape(s), data.back()));
    }
    oa::TraceCapture trace(xs[0].engine());
    const Matrix y = oa::matrix::concat(xs, static_cast<int>(axis) - 3);  // negative axes
    const auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].name, "oa::matrix::concat");
    EXPECT_EQ(ops[0].dispatches, 3u);
    EXPECT_EQ(ops[0].inputs.size(), 3u);
    auto want = base;
    want[axis] = 8;
    EXPECT_EQ(y.shape(), Shape(want));
    EXPECT_TRUE(oa_test::near(y.to_vector(), oa::reference::concat(data, shapes, axis), 0, 0));
  }
}

TEST(MatrixConcat, ChunkInvertsConcat) {
  const Shape s{4, 9, 6};
  const auto data = values(s.numel(), -3.0f);
  const Matrix x = Matrix::from_vector(s, data);
  for (int axis : {0, 1, 2}) {
    SCOPED_TRACE(testing::Message() << "axis " << axis);
    const std::int64_t parts = axis == 1 ? 3 : 2;
    oa::TraceCapture trace(x.engine());
    const auto pieces = oa::matrix::chunk(x, parts, axis);
    const auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].name, "oa::matrix::chunk");
    EXPECT_EQ(ops[0].outputs.size(), static_cast<std::size_t>(parts));
    ASSERT_EQ(pieces.size(), static_cast<std::size_t>(parts));
    std::vector<std::vector<float>> got;
    std::vector<std::vector<std::int64_t>> shapes;
    for (const Matrix& p : pieces) {
      auto want = s.to_vector();
      want[static_cast<std::size_t>(axis)] /= parts;
      EXPECT_EQ(p.shape(), Shape(want));
      got.push_back(p.to_vector());
      shapes.push_back(p.shape().to_vector());
    }
    // The concatenation of the slices (by the reference) is x again.
    EXPECT_TRUE(oa_test::near(data, oa::reference::concat(got, shapes, static_cast<std::size_t>(axis)), 0, 0));
  }
}

TEST(MatrixConcat, ZeroExtentsAndSingleOperand) {
  const Matrix a = Matrix::from_vector({2, 0}, std::vector<float>{});
  const auto bv = values(6, 1.0f);
  const std::vector<double> want(bv.begin(), bv.end());
  const Matrix b = Matrix::from_vector({2, 3}, bv);
  const Matrix y = oa::matrix::concat({a, b, a}, 1);
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_TRUE(oa_test::near(y.to_vector(), want, 0, 0));
  const Matrix one = oa::matrix::concat({b}, 0);
  EXPECT_TRUE(oa_test::near(one.to_vector(), want, 0, 0));
  const auto pieces = oa::matrix::chunk(a, 2, 0);
  EXPECT_EQ(pieces.at(1).shape(), Shape({1, 0}));
}

// torch.chunk's uneven slices: ceil(n / parts) each, the last one smaller,
// and fewer than `parts` when n is not a multiple of them.
TEST(MatrixConcat, ChunkUneven) {
  const Shape s{2, 7};
  const auto data = values(s.numel(), -2.0f);
  const Matrix x = Matrix::from_vector(s, data);
  const std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> cases = {
      {3, {3, 3, 1}}, {4, {2, 2, 2, 1}}, {5, {2, 2, 2, 1}}, {6, {2, 2, 2, 1}}, {9, {1, 1, 1, 1, 1, 1, 1}}};
  for (const auto& [parts, extents] : cases) {
    SCOPED_TRACE(testing::Message() << "parts " << parts);
    const auto pieces = oa::matrix::chunk(x, parts, 1);
    ASSERT_EQ(pieces.size(), extents.size());
    std::vector<std::vector<float>> got;
    std::vector<std::vector<std::int64_t>> shapes;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(pieces[i].shape(), Shape({2, extents[i]}));
      got.push_back(pieces[i].to_vector());
      shapes.push_back(pieces[i].shape().to_vector());
    }
    EXPECT_TRUE(oa_test::near(data, oa::reference::concat(got, shapes, 1), 0, 0));
  }
  EXPECT_EQ(oa::matrix::chunk(Matrix::zeros({0, 2}), 3, 0).size(), 3u);
  oa::test::gradcheck({oa::test::random_input({5, 2}, 5)},
                      [](const std::vector<Matrix>& m) { return oa::matrix::chunk(m[0], 3, 0)[2]; },
                      [](const std::vector<std::vector<double>>& v) { return std::vector<double>(v[0].begin() + 8, v[0].end()); });
}

TEST(MatrixConcat, ChunkThenConcatGradients) {
  using oa::test::random_input;
  // concat's own gradients: the op table (tests/ops/layout_ops.cpp).
  // chunk with one slice unused (its gradient is zero) and the others reordered.
  oa::test::gradcheck({random_input({3, 6}, 4)},
                      [](const std::vector<Matrix>& m) {
                        const auto p = oa::matrix::chunk(m[0], 3, 1);
                        return oa::matrix::concat({p[2], p[0]}, 1);
                      },
                      [](const std::vector<std::vector<double>>& v) {
                        std::vector<double> y;
                        for (int r = 0; r < 3; ++r)
                          for (int c : {4, 5, 0, 1}) y.push_back(v[0][static_cast<std::size_t>(r * 6 + c)]);
                        return y;
                      });
}

TEST(MatrixConcat, Errors) {
  using oa::ErrorKind;
  const Matrix a = Matrix::zeros({2, 3}), b = Matrix::zeros({3, 3});
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({}, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::concat", "empty"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({a, b}, 1); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::concat", "[3, 3]", "[2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({a, a}, 2); }, ErrorKind::InvalidArgument, {"oa::matrix::concat", "axis 2"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({a, Matrix()}, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::concat", "undefined"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::chunk(a, 0, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::chunk", "parts 0"}));
  // An empty axis gives one empty slice per part: a bounded number of them.
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::chunk(Matrix::zeros({0, 2}), std::int64_t{1} << 40, 0); },
                              ErrorKind::InvalidArgument, {"oa::matrix::chunk", "parts 1099511627776", "empty axis 0", "[0, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::chunk(Matrix::zeros({}), 1, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::chunk", "out of range"}));
}

}  // namespace
