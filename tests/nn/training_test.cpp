// A small MLP and a small convnet each overfit one tiny batch to near-zero
// loss with plain SGD: every module's forward and backward working together.
#include <gtest/gtest.h>

#include <memory>

#include "oa/ml/nn/nn.hpp"
#include "oa/ml/functional.hpp"
#include "oa/ml/optim.hpp"
#include "oa/oa.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::Matrix;
using namespace oa::ml::nn;

// Trains `model` on (x, targets) for `steps` full-batch steps of plain SGD
// on the cross entropy; returns the first and the last loss.
std::pair<float, float> overfit(Module& model, const Matrix& x, const Matrix& targets, int steps, float lr) {
  oa::ml::optim::Sgd sgd(model.parameters(), {.lr = lr});
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    sgd.zero_grad();
    const Matrix loss = oa::ml::cross_entropy(model(x), targets);
    oa::backward(loss);
    sgd.step();
    if (step == 0) first = loss.item();
    if (step == steps - 1) last = loss.item();
  }
  return {first, last};
}

TEST(NnTraining, MlpOverfitsOneBatch) {
  oa::ml::Generator g(1);
  Sequential mlp({std::make_shared<Linear>(6, 32, g), std::make_shared<ReLU>(), std::make_shared<Linear>(32, 32, g),
                  std::make_shared<Tanh>(), std::make_shared<Linear>(32, 4, g)});
  const Matrix x = Matrix::from_vector({8, 6}, oa::test::test_values(8 * 6, 2));
  const std::vector<std::int32_t> labels{0, 1, 2, 3, 3, 2, 1, 0};
  const Matrix targets = Matrix::from_i32({8}, labels);
  const auto [first, last] = overfit(mlp, x, targets, 150, 0.5f);
  EXPECT_GT(first, 1.0f);
  EXPECT_LT(last, 0.02f) << "first loss " << first;
  EXPECT_EQ(oa::ml::accuracy(mlp(x), targets).item(), 1.0f);
}

TEST(NnTraining, ConvnetOverfitsOneBatch) {
  oa::ml::Generator g(3);
  Sequential net({std::make_shared<Conv2d>(1, 6, std::array<std::int64_t, 2>{3, 3}, g, oa::ml::Conv2dOptions{.padding = {1, 1}}),
                  std::make_shared<BatchNorm2d>(6), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
                  std::make_shared<Conv2d>(6, 8, std::array<std::int64_t, 2>{3, 3}, g), std::make_shared<ReLU>(),
                  std::make_shared<GlobalAvgPool2d>(), std::make_shared<Linear>(8, 3, g)});
  const Matrix x = Matrix::from_vector({8, 1, 8, 8}, oa::test::test_values(8 * 64, 4));
  const std::vector<std::int32_t> labels{0, 1, 2, 0, 1, 2, 0, 1};
  const Matrix targets = Matrix::from_i32({8}, labels);
  const auto [first, last] = overfit(net, x, targets, 150, 0.2f);
  EXPECT_LT(last, 0.02f) << "first loss " << first;
  net.eval();  // running statistics instead of the batch's: still separates the batch it learned
  EXPECT_EQ(oa::ml::accuracy(net(x), targets).item(), 1.0f);
}

}  // namespace
