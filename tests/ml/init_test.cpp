#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace {

using oa::Shape;
namespace init = oa::ml::init;

struct Stats {
  double mean = 0, var = 0, min = 0, max = 0;
};

Stats stats(const std::vector<float>& v) {
  Stats s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (float x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (float x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(v.size());
  return s;
}

// Uniform on [-bound, bound): every value inside, the extremes nearly reached,
// mean 0 and variance bound^2 / 3 within sampling tolerance.
void expect_symmetric_uniform(const oa::Matrix& m, double bound) {
  const auto v = m.to_vector();
  const auto s = stats(v);
  const double n = static_cast<double>(v.size());
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_LT(s.min, -0.97 * bound);
  EXPECT_GT(s.max, 0.97 * bound);
  const double var = bound * bound / 3.0;
  EXPECT_NEAR(s.mean, 0.0, 5.0 * std::sqrt(var / n));
  EXPECT_NEAR(s.var, var, 0.08 * var);
}

void expect_normal(const oa::Matrix& m, double mean, double std) {
  const auto v = m.to_vector();
  const auto s = stats(v);
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(s.mean, mean, 5.0 * std / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(s.var), std, 0.05 * std);
  EXPECT_GT(s.max - mean, 2.5 * std);  // tails are present
  EXPECT_LT(s.min - mean, -2.5 * std);
}

TEST(NnInit, FansFollowPyTorch) {
  auto f = init::fans(Shape{64, 75});  // Linear [O, I]
  EXPECT_EQ(f.fan_in, 75);
  EXPECT_EQ(f.fan_out, 64);
  f = init::fans(Shape{8, 3, 5});  // Conv1d OIK
  EXPECT_EQ(f.fan_in, 15);
  EXPECT_EQ(f.fan_out, 40);
  f = init::fans(Shape{8, 2, 3, 5});  // Conv2d OIHW, groups 2 on 4 input channels
  EXPECT_EQ(f.fan_in, 30);
  EXPECT_EQ(f.fan_out, 120);
  f = init::fans(Shape{6, 4, 3, 3});  // ConvTranspose2d IOHW: dim 1 is out_channels / groups
  EXPECT_EQ(f.fan_in, 36);
  EXPECT_EQ(f.fan_out, 54);
  EXPECT_TRUE(oa_test::throws([] { init::fans(Shape{7}); }, oa::ErrorKind::InvalidArgument, {"oa::ml::init::fans", "rank 1"}));
  oa::ml::Generator g(1);
  EXPECT_THROW(init::kaiming_uniform(Shape{4, 0}, g), oa::Error);
  EXPECT_THROW(init::xavier_uniform(Shape{0, 0}, g), oa::Error);
}

TEST(NnInit, GainsMatchCalculateGain) {
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Linear), 1.0);
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Conv), 1.0);
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Relu), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::LeakyRelu), std::sqrt(2.0 / (1.0 + 0.0001)));
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::LeakyRelu, std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(init::gain(init::Nonlinearity::Selu), 0.75);
}

TEST(NnInit, LayerDefaultsHaveTheirBoundsAndStatistics) {
  oa::ml::Generator g(2024);
  // Linear(75, 64): bound 1 / sqrt(75) for weight and bias.
  const double b = 1.0 / std::sqrt(75.0);
  expect_symmetric_uniform(init::default_weight(Shape{64, 75}, g), b);
  const auto bias = init::default_bias(Shape{64}, Shape{64, 75}, g).to_vector();
  for (float x : bias) EXPECT_LE(std::abs(x), b);
  // Conv2d(3, 40, 5): fan_in 75 again; odd sizes.
  expect_symmetric_uniform(init::default_weight(Shape{40, 3, 5, 5}, g), b);
  // ConvTranspose1d(in 33, out 7, k 3): fan_in = 7 * 3.
  expect_symmetric_uniform(init::default_weight(Shape{33, 7, 3}, g), 1.0 / std::sqrt(21.0));
  // Zero fan_in: a zero bias, as PyTorch.
  EXPECT_EQ(init::default_bias(Shape{3}, Shape{3, 0}, g).to_vector(), std::vector<float>(3, 0.0f));
  // Embedding(97, 51): N(0, 1).
  expect_normal(init::embedding_weight(Shape{97, 51}, g), 0.0, 1.0);
}

TEST(NnInit, KaimingAndXavierScales) {
  oa::ml::Generator g(5);
  expect_symmetric_uniform(init::kaiming_uniform(Shape{50, 60}, g, 0.0, init::FanMode::FanIn, init::Nonlinearity::Relu),
                           std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(60.0));
  expect_symmetric_uniform(init::kaiming_uniform(Shape{50, 60}, g, 0.0, init::FanMode::FanOut, init::Nonlinearity::Relu),
                           std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(50.0));
  expect_normal(init::kaiming_normal(Shape{70, 30, 3}, g, 0.0, init::FanMode::FanIn, init::Nonlinearity::Relu), 0.0,
                std::sqrt(2.0) / std::sqrt(90.0));
  expect_symmetric_uniform(init::xavier_uniform(Shape{40, 90}, g, 2.0), 2.0 * std::sqrt(6.0 / 130.0));
  expect_normal(init::xavier_normal(Shape{40, 90}, g), 0.0, std::sqrt(2.0 / 130.0));
  expect_normal(init::normal(Shape{3001}, 2.0f, 0.5f, g), 2.0, 0.5);
  const auto u = init::uniform(Shape{257}, 1.0f, 3.0f, g).to_vector();
  for (float x : u) {
    EXPECT_GE(x, 1.0f);
    EXPECT_LT(x, 3.0f);
  }
  EXPECT_EQ(init::ones(Shape{2, 3}).to_vector(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(init::zeros(Shape{5}).to_vector(), std::vector<float>(5, 0.0f));
  EXPECT_THROW(init::uniform(Shape{2}, 1.0f, 0.0f, g), oa::Error);
  EXPECT_THROW(init::normal(Shape{2}, 0.0f, -1.0f, g), oa::Error);
}

TEST(NnInit, SeededAndDeterministic) {
  oa::ml::Generator a(77), b(77), c(78);
  const auto wa = init::default_weight(Shape{9, 13}, a).to_vector();
  EXPECT_EQ(wa, init::default_weight(Shape{9, 13}, b).to_vector());
  EXPECT_NE(wa, init::default_weight(Shape{9, 13}, c).to_vector());
  // Each draw consumes one seed, so consecutive layers differ.
  EXPECT_EQ(a.counter(), 1u);
  EXPECT_NE(wa, init::default_weight(Shape{9, 13}, a).to_vector());
}

}  // namespace
