// Gradients of the elementwise ops beyond the op table (tests/ops/): one
// operand's gradient alone, what is saved, ties, pass-through, reshape.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using namespace oa::test::gradcheck_names;

TEST(AutogradElementwise, UnaryBackwardTrace) {
  auto x = oa::set_requires_grad(Matrix::uniform({4, 5}, 0.5f, 2.0f, 3));
  auto y = oa::matrix::log(x);
  EXPECT_EQ(oa::autograd::grad_fn_name(y), "oa::matrix::log");
  oa::TraceCapture t(x.engine());
  oa::backward(y, Matrix::ones({4, 5}));
  auto ops = t.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::matrix::log backward");
  EXPECT_EQ(ops[0].dispatches, 1u);
}

// f64 reference of a binary op with broadcasting (NumPy rules, right-aligned).
oa::test::ReferenceForward map2(std::function<double(double, double)> f, const Shape& sa, const Shape& sb) {
  return [f, sa, sb](const Inputs& x) {
    const std::size_t rank = std::max(sa.rank(), sb.rank());
    std::vector<std::int64_t> out(rank);
    auto extent = [&](const Shape& s, std::size_t axis) {  // axis of the output
      const std::size_t shift = rank - s.rank();
      return axis < shift ? std::int64_t{1} : s[axis - shift];
    };
    std::int64_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= (out[i] = std::max(extent(sa, i), extent(sb, i)));
    auto flat = [&](const Shape& s, std::int64_t index) {
      std::int64_t off = 0, stride = 1;
      for (std::size_t i = rank; i-- > 0;) {
        const std::int64_t coord = index % out[i];
        index /= out[i];
        const std::int64_t e = extent(s, i);
        off += (e == 1 ? 0 : coord) * stride;
        stride *= e;
      }
      return off;
    };
    Vec y(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = f(x[0][flat(sa, i)], x[1][flat(sb, i)]);
    return y;
  };
}

TEST(AutogradElementwise, BinaryGradientOfOneOperand) {
  // Only b requires grad: the backward computes just its gradient.
  auto shape = Shape{3, 4};
  gradcheck(
      {random_input(shape, 5, -2, 2, false), random_input(shape, 6, 0.5, 2)},
      [](const std::vector<Matrix>& x) { return x[0] / x[1]; }, map2([](double u, double v) { return u / v; }, shape, shape));
  auto a = Matrix::uniform(shape, -1, 1, 1);
  auto b = oa::set_requires_grad(Matrix::uniform(shape, 0.5f, 2, 2));
  auto z = a * b;
  oa::TraceCapture t(a.engine());
  oa::backward(z, Matrix::ones(shape));
  auto ops = t.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].label(), "oa::matrix::mul backward");
  EXPECT_EQ(ops[0].dispatches, 1u);
  EXPECT_EQ(ops[0].outputs.size(), 1u);
}

TEST(AutogradElementwise, SavesOnlyWhatTheNeededGradientsRead) {
  auto x = Matrix::from_vector({3}, std::vector<float>{1, 2, 3});  // data
  auto w = oa::set_requires_grad(Matrix::from_vector({3}, std::vector<float>{4, 5, 6}));
  auto y = x * w;  // dy/dw = x: only x is saved
  w.write(std::vector<float>{0, 0, 0});
  oa::backward(y, Matrix::ones({3}));
  EXPECT_EQ(oa::grad(w).to_vector(), (std::vector<float>{1, 2, 3}));
  auto y2 = x * w;
  x.write(std::vector<float>{7, 8, 9});
  EXPECT_TRUE(oa_test::throws([&] { oa::backward(y2, Matrix::ones({3})); }, oa::ErrorKind::FailedPrecondition,
                              {"oa::matrix::mul", "modified in place"}));
}

TEST(AutogradElementwise, MaximumAndMinimumSplitTies) {
  // torch.maximum / torch.minimum send half of the gradient to each operand on a tie.
  auto a = oa::set_requires_grad(Matrix::from_vector({4}, std::vector<float>{1, 2, 3, -1}));
  auto b = oa::set_requires_grad(Matrix::from_vector({4}, std::vector<float>{1, 5, 0, -1}));
  auto g = Matrix::from_vector({4}, std::vector<float>{2, 2, 2, 4});
  oa::backward(oa::matrix::maximum(a, b), g);
  EXPECT_EQ(oa::grad(a).to_vector(), (std::vector<float>{1, 0, 2, 2}));
  EXPECT_EQ(oa::grad(b).to_vector(), (std::vector<float>{1, 2, 0, 2}));
  oa::zero_grad(a);
  oa::zero_grad(b);
  oa::backward(oa::matrix::minimum(a, b), g);
  EXPECT_EQ(oa::grad(a).to_vector(), (std::vector<float>{1, 2, 0, 2}));
  EXPECT_EQ(oa::grad(b).to_vector(), (std::vector<float>{1, 0, 2, 2}));
}

TEST(AutogradElementwise, AddAndSubPassGradientsThrough) {
  auto a = oa::set_requires_grad(Matrix::uniform({3, 5}, -1, 1, 1));
  auto b = oa::set_requires_grad(Matrix::uniform({3, 5}, -1, 1, 2));
  auto z = a - b;
  oa::TraceCapture t(a.engine());
  oa::backward(z, Matrix::full({3, 5}, 2.0f));
  auto ops = t.ops();
  // add's and sub's gradient for a is gy itself; sub negates gy for b.
  ASSERT_EQ(ops.size(), 1u);  // the negation (a's gradient is a plain copy of gy, which the caller owns)
  EXPECT_EQ(ops[0].label(), "oa::matrix::sub backward");
  EXPECT_EQ(oa::grad(a).to_vector(), std::vector<float>(15, 2.0f));
  EXPECT_EQ(oa::grad(b).to_vector(), std::vector<float>(15, -2.0f));
}

TEST(AutogradElementwise, ReshapeGradient) {
  const Shape s{4, 6};
  auto ref = [](const Inputs& x) {
    Vec y(x[0].size());
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[0][i] * x[1][i];
    return y;
  };
  // reshape [4, 6] -> [2, 3, 4] -> [24], times a [24] view of the second input.
  gradcheck(
      {random_input(s, 1), random_input(s, 2)},
      [](const std::vector<Matrix>& x) {
        return x[0].reshape({2, 3, 4}).reshape({-1}) * x[1].reshape({24});
      },
      ref);
  auto x = oa::set_requires_grad(Matrix::zeros({2, 3}));
  auto v = x.reshape({3, 2});
  EXPECT_EQ(oa::autograd::grad_fn_name(v), "oa::matrix::reshape");
  oa::TraceCapture t(x.engine());
  oa::backward(v, Matrix::ones({3, 2}));
  EXPECT_TRUE(t.ops().empty());  // a view's backward is a view: no GPU work
  EXPECT_TRUE(oa::grad(x).shape() == (Shape{2, 3}));
}

}  // namespace
