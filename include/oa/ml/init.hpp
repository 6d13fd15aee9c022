#pragma once
// Parameter initialisation as torch.nn.init does it, from a seeded
// oa::ml::Generator: each call draws one seed from the generator and fills the
// Matrix on the device with the counter-based Matrix::uniform / Matrix::normal,
// so a seed gives the same values on every device.
//
// Fans follow torch.nn.init._calculate_fan_in_and_fan_out: for a weight of
// rank >= 2, receptive = product of the extents after the first two,
// fan_in = shape[1] * receptive and fan_out = shape[0] * receptive. That gives
// I for a Linear weight [O, I], (I / groups) * k... for a convolution weight
// OIK / OIHW, and (O / groups) * k... for a transposed convolution weight
// IOK / IOHW, exactly as PyTorch computes them.
#include <cstdint>
#include <optional>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/generator.hpp"

namespace oa::ml::init {

struct Fans {
  std::int64_t fan_in = 0;
  std::int64_t fan_out = 0;
};
// Throws InvalidArgument for a rank below 2.
Fans fans(const Shape& weight);

// torch.nn.init.calculate_gain.
enum class Nonlinearity { Linear, Conv, Sigmoid, Tanh, Relu, LeakyRelu, Selu };
// `negative_slope` is LeakyRelu's slope (ignored otherwise).
double gain(Nonlinearity nonlinearity, double negative_slope = 0.01);

enum class FanMode { FanIn, FanOut };

// U[low, high) and N(mean, std^2). Throw InvalidArgument for low > high or std < 0.
Matrix uniform(const Shape& shape, float low, float high, Generator& generator, std::optional<Engine> engine = {});
Matrix normal(const Shape& shape, float mean, float std, Generator& generator, std::optional<Engine> engine = {});
Matrix zeros(const Shape& shape, std::optional<Engine> engine = {});
Matrix ones(const Shape& shape, std::optional<Engine> engine = {});

// He et al. 2015 (torch.nn.init.kaiming_uniform_ / kaiming_normal_):
// std = gain(nonlinearity, a) / sqrt(fan); uniform on +-sqrt(3) * std.
// Throw InvalidArgument for a rank below 2 or a zero fan.
Matrix kaiming_uniform(const Shape& weight, Generator& generator, double a = 0.0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyRelu, std::optional<Engine> engine = {});
Matrix kaiming_normal(const Shape& weight, Generator& generator, double a = 0.0, FanMode mode = FanMode::FanIn,
                      Nonlinearity nonlinearity = Nonlinearity::LeakyRelu, std::optional<Engine> engine = {});

// Glorot & Bengio 2010 (torch.nn.init.xavier_uniform_ / xavier_normal_):
// std = gain * sqrt(2 / (fan_in + fan_out)); uniform on +-sqrt(3) * std.
// Throw InvalidArgument for a rank below 2 or zero fans.
Matrix xavier_uniform(const Shape& weight, Generator& generator, double gain = 1.0, std::optional<Engine> engine = {});
Matrix xavier_normal(const Shape& weight, Generator& generator, double gain = 1.0, std::optional<Engine> engine = {});

// ── The defaults of PyTorch's layers ────────────────────────────────────────
// Weight of Linear [O, I], Conv1d/2d [O, I/groups, k...] and ConvTranspose1d/2d
// [I, O/groups, k...]: kaiming_uniform with a = sqrt(5) (reset_parameters in
// torch.nn.Linear / _ConvNd), which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
Matrix default_weight(const Shape& weight, Generator& generator, std::optional<Engine> engine = {});
// Bias of the same layers: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in of
// `weight`, or zeros when fan_in is 0 (as PyTorch).
Matrix default_bias(const Shape& bias, const Shape& weight, Generator& generator, std::optional<Engine> engine = {});
// Embedding weight [num_embeddings, dim]: N(0, 1) (torch.nn.Embedding).
Matrix embedding_weight(const Shape& weight, Generator& generator, std::optional<Engine> engine = {});

}  // namespace oa::ml::init
