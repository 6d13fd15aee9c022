#include "oa/ml/init.hpp"

#include <cmath>

namespace oa::ml::init {

namespace {

std::int64_t chosen_fan(const Shape& weight, FanMode mode, const char* op) {
  const Fans f = fans(weight);
  const std::int64_t fan = mode == FanMode::FanIn ? f.fan_in : f.fan_out;
  if (fan == 0) fail(ErrorKind::InvalidArgument, "{}: weight {} has a zero {}", op, weight, mode == FanMode::FanIn ? "fan_in" : "fan_out");
  return fan;
}

double xavier_std(const Shape& weight, double gain, const char* op) {
  const Fans f = fans(weight);
  const std::int64_t sum = checked_add(f.fan_in, f.fan_out, "fan_in + fan_out");
  if (sum == 0) fail(ErrorKind::InvalidArgument, "{}: weight {} has zero fans", op, weight);
  return gain * std::sqrt(2.0 / static_cast<double>(sum));
}

Matrix symmetric_uniform(const Shape& shape, double bound, Generator& g, const std::optional<Engine>& engine) {
  const auto b = static_cast<float>(bound);
  return Matrix::uniform(shape, -b, b, g.next_seed(), engine);
}

}  // namespace

Fans fans(const Shape& weight) {
  if (weight.rank() < 2)
    fail(ErrorKind::InvalidArgument, "oa::ml::init::fans: weight {} has rank {}; fans need rank 2 or more", weight, weight.rank());
  std::int64_t receptive = 1;
  for (std::size_t i = 2; i < weight.rank(); ++i) receptive = checked_mul(receptive, weight[i], "receptive field size");
  return {checked_mul(weight[1], receptive, "fan_in"), checked_mul(weight[0], receptive, "fan_out")};
}

double gain(Nonlinearity nonlinearity, double negative_slope) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv:
    case Nonlinearity::Sigmoid: return 1.0;
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::Relu: return std::sqrt(2.0);
    case Nonlinearity::LeakyRelu: return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
    case Nonlinearity::Selu: return 0.75;
  }
  return 1.0;
}

Matrix uniform(const Shape& shape, float low, float high, Generator& generator, std::optional<Engine> engine) {
  if (!(low <= high)) fail(ErrorKind::InvalidArgument, "oa::ml::init::uniform: low {} exceeds high {} for {}", low, high, shape);
  return Matrix::uniform(shape, low, high, generator.next_seed(), engine);
}

Matrix normal(const Shape& shape, float mean, float std, Generator& generator, std::optional<Engine> engine) {
  if (!(std >= 0)) fail(ErrorKind::InvalidArgument, "oa::ml::init::normal: std {} is negative for {}", std, shape);
  return Matrix::normal(shape, mean, std, generator.next_seed(), engine);
}

Matrix zeros(const Shape& shape, std::optional<Engine> engine) { return Matrix::zeros(shape, engine); }
Matrix ones(const Shape& shape, std::optional<Engine> engine) { return Matrix::ones(shape, engine); }

Matrix kaiming_uniform(const Shape& weight, Generator& generator, double a, FanMode mode, Nonlinearity nonlinearity,
                       std::optional<Engine> engine) {
  const auto fan = chosen_fan(weight, mode, "oa::ml::init::kaiming_uniform");
  const double std = gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return symmetric_uniform(weight, std::sqrt(3.0) * std, generator, engine);
}

Matrix kaiming_normal(const Shape& weight, Generator& generator, double a, FanMode mode, Nonlinearity nonlinearity,
                      std::optional<Engine> engine) {
  const auto fan = chosen_fan(weight, mode, "oa::ml::init::kaiming_normal");
  const double std = gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return Matrix::normal(weight, 0.0f, static_cast<float>(std), generator.next_seed(), engine);
}

Matrix xavier_uniform(const Shape& weight, Generator& generator, double gain, std::optional<Engine> engine) {
  return symmetric_uniform(weight, std::sqrt(3.0) * xavier_std(weight, gain, "oa::ml::init::xavier_uniform"), generator, engine);
}

Matrix xavier_normal(const Shape& weight, Generator& generator, double gain, std::optional<Engine> engine) {
  const double std = xavier_std(weight, gain, "oa::ml::init::xavier_normal");
  return Matrix::normal(weight, 0.0f, static_cast<float>(std), generator.next_seed(), engine);
}

Matrix default_weight(const Shape& weight, Generator& generator, std::optional<Engine> engine) {
  return kaiming_uniform(weight, generator, std::sqrt(5.0), FanMode::FanIn, Nonlinearity::LeakyRelu, std::move(engine));
}

Matrix default_bias(const Shape& bias, const Shape& weight, Generator& generator, std::optional<Engine> engine) {
  const std::int64_t fan_in = fans(weight).fan_in;
  if (fan_in == 0) return Matrix::zeros(bias, engine);
  return symmetric_uniform(bias, 1.0 / std::sqrt(static_cast<double>(fan_in)), generator, engine);
}

Matrix embedding_weight(const Shape& weight, Generator& generator, std::optional<Engine> engine) {
  return Matrix::normal(weight, 0.0f, 1.0f, generator.next_seed(), engine);
}

}  // namespace oa::ml::init
