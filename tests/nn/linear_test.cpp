// linear() and Linear: forward against the f64 reference, gradients, trace,
// errors and PyTorch's default initialisation.
#include <gtest/gtest.h>

#include <cmath>

#include "oa/ml/nn/linear.hpp"
#include "oa/oa.hpp"
#include "reference/linear.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
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
            Matrix y = oa::ml::nn::linear(m[0], m[1], with_bias ? m[2] : Matrix());
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
        if (op.name == "oa::ml::nn::linear") labels.push_back(op.label());
      EXPECT_EQ(labels, (std::vector<std::string>{"oa::ml::nn::linear", "oa::ml::nn::linear backward"}));
    }
  }
}

TEST(NnLinear, Errors) {
  using oa::ErrorKind;
  const Matrix w = Matrix::zeros({3, 4});
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::nn::linear(Matrix::zeros({2, 5}), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::linear", "[2, 5]", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::nn::linear(Matrix::zeros({2, 4}), w, Matrix::zeros({4})); },
                              ErrorKind::InvalidArgument, {"oa::ml::nn::linear", "bias [4]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::nn::linear(Matrix::zeros({}), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::linear", "rank"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::nn::linear(Matrix::zeros({2, 4}), Matrix::zeros({12})); },
                              ErrorKind::InvalidArgument, {"oa::ml::nn::linear", "[12]"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::ml::nn::linear(Matrix(), w); }, ErrorKind::InvalidArgument,
                              {"oa::ml::nn::linear", "undefined"}));
  const Matrix x = Matrix::zeros({2, 5});
  oa::TraceCapture trace(w.engine());
  EXPECT_ANY_THROW(oa::ml::nn::linear(x, w));
  EXPECT_TRUE(trace.ops().empty());  // validation precedes recording
}

}  // namespace
