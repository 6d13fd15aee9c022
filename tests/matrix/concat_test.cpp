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

// Operands of `base`'s shape but for the given extents along `axis`, of
// `dtype`, with their shapes and values (exact in every dtype: bool 0 and 1,
// i32 integers, the floats halves in [-20, 21)).
struct Operands {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<float>> data;
  std::vector<Matrix> xs;
};
Operands operands(const std::vector<std::int64_t>& base, std::size_t axis, std::initializer_list<std::int64_t> extents,
                  oa::DType dtype = oa::DType::F32) {
  Operands o;
  for (std::int64_t extent : extents) {
    auto s = base;
    s[axis] = extent;
    o.shapes.push_back(s);
    oa::test::GradInput in{Shape(s), {}, false, dtype};
    for (std::int64_t i = 0; i < Shape(s).numel(); ++i)
      in.values.push_back(dtype == oa::DType::Bool ? static_cast<float>((i * 7 + o.xs.size()) % 3 == 0)
                                                   : static_cast<float>((i + 13 * o.xs.size()) % 41) - 20 +
                                                         0.5f * static_cast<float>(dtype != oa::DType::I32));
    o.data.push_back(in.values);
    o.xs.push_back(oa::test::make_input(in));
  }
  return o;
}

TEST(MatrixConcat, AlongEveryAxisWithOddExtents) {
  const std::vector<std::int64_t> base{3, 5, 7};
  for (std::size_t axis = 0; axis < base.size(); ++axis) {
    SCOPED_TRACE(testing::Message() << "axis " << axis);
    const auto [shapes, data, xs] = operands(base, axis, {2, 1, 5});
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
  // An axis of 2^62 beside an empty one: the slice count without overflow (UBSan checks it).
  const auto whole = oa::matrix::chunk(Matrix::zeros({0, std::int64_t{1} << 62}), 1, 1);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].shape(), Shape({0, std::int64_t{1} << 62}));
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

// Every dtype, bit for bit: odd extents put the parts' boundaries inside the
// words of 16-bit and bool results (written by ORing into zeros).
TEST(MatrixConcat, EveryDtypeIsCopiedExactly) {
  using oa::DType;
  const std::vector<std::int64_t> base{3, 5, 7};
  for (DType dtype : {DType::F16, DType::BF16, DType::I32, DType::Bool})
    for (std::size_t axis = 0; axis < base.size(); ++axis) {
      SCOPED_TRACE(testing::Message() << oa::to_string(dtype) << " axis " << axis);
      const auto [shapes, data, xs] = operands(base, axis, {3, 1, 2}, dtype);
      const Matrix y = oa::matrix::concat(xs, static_cast<int>(axis));
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(oa_test::near(oa::test::host_values(y), oa::reference::concat(data, shapes, axis), 0, 0));
      const Matrix stacked = oa::matrix::stack({xs[0], xs[0]}, static_cast<int>(axis));
      auto one = shapes[0];
      one.insert(one.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      EXPECT_TRUE(oa_test::near(oa::test::host_values(stacked), oa::reference::concat(std::vector{data[0], data[0]}, {one, one}, axis), 0, 0));
      // chunk and split give the parts back.
      const auto parts = oa::matrix::split(y, std::vector<std::int64_t>{3, 1, 2}, static_cast<int>(axis));
      const auto halves = oa::matrix::chunk(y, 2, static_cast<int>(axis));
      ASSERT_EQ(parts.size(), 3u);
      ASSERT_EQ(halves.size(), 2u);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        EXPECT_EQ(parts[i].dtype(), dtype);
        EXPECT_TRUE(oa_test::near(oa::test::host_values(parts[i]), std::vector<double>(data[i].begin(), data[i].end()), 0, 0));
      }
      const std::vector<std::vector<float>> got{oa::test::host_values(halves[0]), oa::test::host_values(halves[1])};
      EXPECT_TRUE(oa_test::near(oa::test::host_values(y),
                                oa::reference::concat(got, {halves[0].shape().to_vector(), halves[1].shape().to_vector()}, axis), 0, 0));
    }
}

// 16-bit gradients: concat's backward is split's lowering and chunk's is
// concat's, both in the operands' dtype.
TEST(MatrixConcat, HalfGradientsKeepTheDtype) {
  using oa::DType;
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(oa::to_string(dtype));
    const Matrix a = oa::matrix::cast(Matrix::from_vector({2, 3}, values(6, 1.0f)), dtype),
                 b = oa::matrix::cast(Matrix::from_vector({2, 1}, values(2, 4.0f)), dtype);
    oa::set_requires_grad(a);
    oa::set_requires_grad(b);
    const Matrix y = oa::matrix::concat({a, b}, 1);
    const Matrix w = oa::matrix::cast(Matrix::from_vector({2, 4}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}), dtype);
    oa::backward(y, w);
    const Matrix ga = oa::grad(a), gb = oa::grad(b);
    EXPECT_EQ(ga.dtype(), dtype);
    EXPECT_TRUE(oa_test::near(oa::matrix::cast(ga, DType::F32).to_vector(), std::vector<double>{1, 2, 3, 5, 6, 7}, 0, 0));
    EXPECT_TRUE(oa_test::near(oa::matrix::cast(gb, DType::F32).to_vector(), std::vector<double>{4, 8}, 0, 0));
    const Matrix x = oa::matrix::cast(Matrix::from_vector({2, 5}, values(10, -1.0f)), dtype);
    oa::set_requires_grad(x);
    const auto p = oa::matrix::chunk(x, 2, 1);  // widths 3 and 2
    oa::backward(p[1], oa::matrix::cast(Matrix::from_vector({2, 2}, std::vector<float>{1, 2, 3, 4}), dtype));
    EXPECT_EQ(oa::grad(x).dtype(), dtype);
    EXPECT_TRUE(oa_test::near(oa::matrix::cast(oa::grad(x), DType::F32).to_vector(), std::vector<double>{0, 0, 0, 1, 2, 0, 0, 0, 3, 4}, 0, 0));
  }
}

TEST(MatrixConcat, MixedDtypesAreRefusedOutsideAutocast) {
  using oa::DType;
  using oa::ErrorKind;
  const Matrix f = Matrix::zeros({2, 3}), h = oa::matrix::cast(f, DType::F16);
  const Matrix i = Matrix::from_i32({2, 3}, std::vector<std::int32_t>(6, 1));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({f, h}, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::concat", "xs[1] is f16 [2, 3]", "xs[0] is f32 [2, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::stack({i, f}, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::stack", "xs[1] is f32 [2, 3]", "xs[0] is i32 [2, 3]"}));
  // Under autocast 16-bit operands keep their dtype, and mixed floating
  // ones widen to the widest (torch.cat and torch.stack under torch.autocast).
  oa::AutocastGuard guard(DType::F16);
  EXPECT_EQ(oa::matrix::concat({h, h}, 0).dtype(), DType::F16);
  EXPECT_EQ(oa::matrix::stack({h, h}, 0).dtype(), DType::F16);
  EXPECT_EQ(oa::matrix::concat({h, f}, 0).dtype(), DType::F32);
  EXPECT_EQ(oa::matrix::stack({h, f}, 0).dtype(), DType::F32);
  EXPECT_EQ(oa::matrix::stack({oa::matrix::cast(f, DType::BF16), h}, 0).dtype(), DType::F32);
  EXPECT_TRUE(oa_test::throws([&] { oa::matrix::concat({i, f}, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::concat", "i32", "f32"}));
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
