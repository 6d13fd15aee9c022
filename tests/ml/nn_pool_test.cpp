// max_pool_2d, avg_pool_2d and global_avg_pool_2d against the f64 references
// (their gradients: the op table, tests/ops/nn_ops.cpp).
#include <limits>

#include "ml/nn_common.hpp"

namespace {

using namespace oa::nn_test;


const std::vector<ref::PoolShape> kCases = {
    {2, 3, 5, 7, {2, 2}, {2, 2}, {0, 0}},  // the default stride, odd extents
    {1, 2, 6, 5, {3, 3}, {2, 2}, {1, 1}},  // overlapping windows with padding
    {1, 1, 7, 4, {3, 2}, {1, 2}, {1, 0}},  // rectangular, per-axis stride and padding
    {2, 1, 4, 4, {4, 4}, {1, 1}, {2, 2}},  // padding of half the kernel
    {1, 3, 3, 3, {1, 1}, {3, 1}, {0, 0}},
};

ml::Pool2dOptions options(const ref::PoolShape& p) { return {p.kernel, p.stride, p.padding}; }

TEST(NnPool, MaxAndAverageForwardMatchReference) {
  for (const auto& p : kCases) {
    for (bool max : {true, false}) {
      SCOPED_TRACE(testing::Message() << (max ? "max" : "avg") << " H " << p.H << " W " << p.W << " k " << p.kernel[0] << "x" << p.kernel[1]);
      const Shape shape{p.N, p.C, p.H, p.W};
      const auto x = test_values(shape.numel(), 7 + p.H);
      const Matrix mx = Matrix::from_vector(shape, x);
      Matrix y;
      const auto ops = traced([&] { y = max ? ml::max_pool_2d(mx, options(p)) : ml::avg_pool_2d(mx, options(p)); });
      expect_trace(ops, {{max ? "oa::ml::max_pool_2d" : "oa::ml::avg_pool_2d", 1}});
      EXPECT_EQ(std::get<std::vector<std::int64_t>>(*ops[0].attribute("stride")), (std::vector<std::int64_t>{p.stride[0], p.stride[1]}));
      EXPECT_TRUE(y.shape() == (Shape{p.N, p.C, p.OH(), p.OW()}));
      EXPECT_TRUE(oa_test::near(y.to_vector(), ref::pool_2d(f64(x), p, max), 1e-6, 1e-5));
    }
  }
}

TEST(NnPool, SquareFormsDefaultTheStrideToTheKernel) {
  const auto x = test_values(2 * 9 * 8, 3);
  const Matrix mx = Matrix::from_vector({1, 2, 9, 8}, x);
  const ref::PoolShape p{1, 2, 9, 8, {3, 3}, {3, 3}, {1, 1}};
  EXPECT_TRUE(oa_test::near(ml::max_pool_2d(mx, 3, 0, 1).to_vector(), ref::pool_2d(f64(x), p, true), 1e-6, 1e-5));
  EXPECT_TRUE(oa_test::near(ml::avg_pool_2d(mx, 3, 0, 1).to_vector(), ref::pool_2d(f64(x), p, false), 1e-6, 1e-5));
  const ref::PoolShape q{1, 2, 9, 8, {2, 2}, {1, 1}, {0, 0}};
  EXPECT_TRUE(oa_test::near(ml::max_pool_2d(mx, 2, 1).to_vector(), ref::pool_2d(f64(x), q, true), 1e-6, 1e-5));
}

TEST(NnPool, MaxPoolPropagatesNaN) {
  std::vector<float> x(16, 1.0f);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  const auto y = ml::max_pool_2d(Matrix::from_vector({1, 1, 4, 4}, x), 2).to_vector();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.0f);
}

TEST(NnPool, BackwardIsOneGatherDispatch) {
  const Matrix x = Matrix::from_vector({1, 2, 6, 6}, test_values(72, 4));
  oa::set_requires_grad(x);
  const Matrix y = ml::max_pool_2d(x, 3, 2, 1);
  expect_trace(traced([&] { oa::backward(y, Matrix::ones(y.shape())); }), {{"oa::ml::max_pool_2d backward", 1}});
}

TEST(NnPool, GlobalAveragePool) {
  for (const Shape& shape : {Shape{2, 3, 5, 7}, Shape{1, 4, 1, 1}, Shape{2, 2, 70, 70}}) {
    SCOPED_TRACE(shape.to_string());
    const auto x = test_values(shape.numel(), 9);
    Matrix y;
    const auto ops = traced([&] { y = ml::global_avg_pool_2d(Matrix::from_vector(shape, x)); });
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].label(), "oa::ml::global_avg_pool_2d");
    EXPECT_TRUE(y.shape() == (Shape{shape[0], shape[1]}));
    EXPECT_TRUE(oa_test::near(y.to_vector(), ref::global_avg_pool_2d(f64(x), shape[0] * shape[1], shape[2] * shape[3]), 1e-6, 1e-5));
  }
  gradcheck({random_input({2, 3, 4, 5}, 10)}, [](const std::vector<Matrix>& in) { return ml::global_avg_pool_2d(in[0]); },
            [](const std::vector<std::vector<double>>& in) { return ref::global_avg_pool_2d(in[0], 6, 20); });
}

TEST(NnPool, GlobalAveragePoolOfNoPlanes) {
  // N = 0 or C = 0 (as torch's adaptive_avg_pool2d): an empty [N, C] result
  // and gradient, each one recorded op of no dispatch.
  for (const Shape& shape : {Shape{0, 3, 4, 5}, Shape{2, 0, 4, 5}, Shape{0, 0, 1, 1}}) {
    SCOPED_TRACE(shape.to_string());
    const Matrix x = oa::set_requires_grad(Matrix::zeros(shape));
    Matrix y;
    expect_trace(traced([&] { y = ml::global_avg_pool_2d(x); }), {{"oa::ml::global_avg_pool_2d", 0}});
    EXPECT_EQ(y.shape(), (Shape{shape[0], shape[1]}));
    expect_trace(traced([&] { oa::backward(y, Matrix::zeros(y.shape())); }), {{"oa::ml::global_avg_pool_2d backward", 0}});
    EXPECT_EQ(oa::grad(x).shape(), shape);
  }
}

TEST(NnPool, InvalidArgumentsRecordNothing) {
  const Matrix x = Matrix::zeros({1, 2, 5, 5});
  expect_invalid([&] { ml::max_pool_2d(Matrix::zeros({2, 5, 5}), 2); }, "oa::ml::max_pool_2d", {"NCHW", "[2, 5, 5]"});
  expect_invalid([&] { ml::avg_pool_2d(x, 0); }, "oa::ml::avg_pool_2d", {"kernel_size"});
  expect_invalid([&] { ml::max_pool_2d(x, ml::Pool2dOptions{{2, 2}, std::array<std::int64_t, 2>{0, 1}, {0, 0}}); }, "oa::ml::max_pool_2d",
                 {"stride"});
  expect_invalid([&] { ml::max_pool_2d(x, 3, 1, 2); }, "oa::ml::max_pool_2d", {"padding", "half"});
  expect_invalid([&] { ml::avg_pool_2d(x, 6); }, "oa::ml::avg_pool_2d", {"exceeds", "[1, 2, 5, 5]"});
  expect_invalid([&] { ml::max_pool_2d(x, 2, 1, -1); }, "oa::ml::max_pool_2d", {"padding"});
  expect_invalid([&] { ml::global_avg_pool_2d(Matrix::zeros({2, 3})); }, "oa::ml::global_avg_pool_2d", {"NCHW"});
  // An empty plane has no mean; torch rejects it too.
  expect_invalid([&] { ml::global_avg_pool_2d(Matrix::zeros({2, 3, 0, 4})); }, "oa::ml::global_avg_pool_2d", {"H and W", "[2, 3, 0, 4]"});
  expect_invalid([&] { ml::global_avg_pool_2d(Matrix::zeros({0, 3, 4, 0})); }, "oa::ml::global_avg_pool_2d", {"H and W", "[0, 3, 4, 0]"});
}

}  // namespace
