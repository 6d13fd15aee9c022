// linear() and Linear: forward against the f64 reference, gradients, trace,
// errors and PyTorch's default initialisation.
#include <gtest/gtest.h>

#include <cmath>

#include "oa/ml/nn/linear.hpp"
#include "oa/oa.hpp"
#include "reference/linear.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"
#include "support/module_check.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
using oa::ml::nn::Linear;
namespace ref = oa::reference;

TEST(NnLinear, FunctionMatchesReferenceAndRecordsOneOp) {
  // Odd extents; rank 3 and rank 1 inputs; with and without bias.
  for (const Shape& xs : {Shape{2, 3, 5}, Shape{5}, Shape{37, 5}}) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(testing::Message() << "x " << xs.to_string() << " bias " << with_bias);
      const std::int64_t rows = xs.rows(), in = 5, out = 7;
      std::vector<oa::test::GradInput> inputs{oa::test::random_input(xs, 1), oa::test::random_input({out, in}, 2)};
      if (with_bias) inputs.push_back(oa::test::random_input({out}, 3));
      oa::TraceCapture trace(Matrix::zeros({1}).engine());
      oa::test::gradcheck(
          inputs,
          [&](const std::vector<Matrix>& m) {
            Matrix y = oa::ml::linear(m[0], m[1], with_bias ? m[2] : Matrix());
            std::vector<std::int64_t> dims = xs.to_vector();
            dims.back() = out;
            EXPECT_EQ(y.shape(), Shape(dims));
            return y;
          },
          [&](const std::vector<std::vector<double>>& v) {
            return ref::linear(v[0], v[1], with_bias ? v[2] : std::vector<double>{}, rows, in, out);
          });
      const auto ops = trace.ops();
      std::vector<std::string> labels;
      for (const auto& op : ops)
        if (op.name == "oa::ml::linear") labels.push_back(op.label());
      EXPECT_EQ(labels, (std::vector<std::string>{"oa::ml::linear", "oa::ml::linear backward"}));
    }
  }
}

TEST(NnLinear, EmptyExtents) {
  // No rows: an empty result. No inputs (in = 0): the bias broadcast.
  const Matrix w = Matrix::from_vector({3, 2}, oa_test::iota(6));
  EXPECT_EQ(oa::ml::linear(Matrix::zeros({0, 2}), w).shape(), Shape({0, 3}));
  const Matrix y = oa::ml::linear(Matrix::zeros({2, 0}), Matrix::zeros({3, 0}), Matrix::from_vector({3}, oa_test::iota(3, 1.0f)));
  EXPECT_TRUE(oa_test::near(y.to_vector(), {1, 2, 3, 1, 2, 3}, 0, 0));
}

TEST(NnLinear, ModuleGradients) {
  oa::ml::Generator g(1);
  Linear layer(6, 3, g);
  oa::test::module_gradcheck(layer, oa::test::random_input({4, 6}, 5), [](const std::vector<std::vector<double>>& v) {
    return ref::linear(v[0], v[1], v[2], 4, 6, 3);
  });
  Linear no_bias(6, 3, g, false);
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(no_bias.parameter_count(), 18);
  oa::test::module_gradcheck(no_bias, oa::test::random_input({2, 2, 6}, 6), [](const std::vector<std::vector<double>>& v) {
    return ref::linear(v[0], v[1], {}, 4, 6, 3);
  });
}

TEST(NnLinear, PyTorchDefaultInitialisation) {
  oa::ml::Generator g(42);
  Linear a(64, 48, g);
  const double bound = 1.0 / std::sqrt(64.0);
  for (const auto& p : {a.weight(), a.bias()}) {
    const auto v = p.value().to_vector();
    double lo = 1, hi = -1, mean = 0;
    for (float x : v) {
      lo = std::min(lo, static_cast<double>(x));
      hi = std::max(hi, static_cast<double>(x));
      mean += x;
    }
    mean /= static_cast<double>(v.size());
    EXPECT_GE(lo, -bound);
    EXPECT_LT(hi, bound);
    if (v.size() > 1000) {  // U(-b, b) fills its range: min and max near the bounds, mean near 0
      EXPECT_LT(lo, -0.95 * bound);
      EXPECT_GT(hi, 0.95 * bound);
      EXPECT_NEAR(mean, 0.0, 0.05 * bound);
    }
  }
  // The same seed gives the same parameters; another seed others.
  oa::ml::Generator g2(42), g3(43);
  Linear b(64, 48, g2), c(64, 48, g3);
  EXPECT_EQ(a.weight().value().to_vector(), b.weight().value().to_vector());
  EXPECT_EQ(a.bias().value().to_vector(), b.bias().value().to_vector());
  EXPECT_NE(a.weight().value().to_vector(), c.weight().value().to_vector());
}

TEST(NnLinear, Errors) {
  using oa::ErrorKind;
  const Matrix w = Matrix::zeros({3, 4});
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::linear(Matrix::zeros({2, 5}), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::linear", "[2, 5]", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::linear(Matrix::zeros({2, 4}), w, Matrix::zeros({4})); },
                              ErrorKind::InvalidArgument, {"oa::ml::linear", "bias [4]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::linear(Matrix::zeros({}), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::linear", "rank"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::linear(Matrix::zeros({2, 4}), Matrix::zeros({12})); },
                              ErrorKind::InvalidArgument, {"oa::ml::linear", "[12]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::linear(Matrix(), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::linear", "undefined"}));
  const Matrix x = Matrix::zeros({2, 5});
  oa::TraceCapture trace(w.engine());
  EXPECT_ANY_THROW(oa::ml::linear(x, w));
  EXPECT_TRUE(trace.ops().empty());  // validation precedes recording
}

}  // namespace
