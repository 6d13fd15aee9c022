#include "oa/ml/nn/conv.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "oa/core/error.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/ml/init.hpp"

namespace oa::ml::nn {

namespace {

// Checks the channel counts, kernel and groups; returns the weight shape
// [lead, second / groups, kernel...] (lead = out for convolutions, in for
// transposed convolutions).
Shape weight_shape(const char* module, std::int64_t in_channels, std::int64_t out_channels, std::span<const std::int64_t> kernel,
                   std::int64_t groups, bool transposed) {
  bool ok = in_channels >= 1 && out_channels >= 1 && groups >= 1;
  for (std::int64_t k : kernel) ok = ok && k >= 1;
  if (!ok || in_channels % groups != 0 || out_channels % groups != 0)
    fail(ErrorKind::InvalidArgument,
         "oa::ml::nn::{}: in_channels {} and out_channels {} must be >= 1 and divisible by groups {} (>= 1), and kernel "
         "extents >= 1",
         module, in_channels, out_channels, groups);
  std::vector<std::int64_t> dims{transposed ? in_channels : out_channels, (transposed ? out_channels : in_channels) / groups};
  dims.insert(dims.end(), kernel.begin(), kernel.end());
  return Shape(dims);
}

// A kernel below 1 is left to Conv1d's check.
Conv1dOptions causal_options(std::int64_t kernel_size, std::int64_t dilation, std::int64_t groups) {
  if (dilation < 1) fail(ErrorKind::InvalidArgument, "CausalConv1d: dilation must be at least 1, got {}", dilation);
  return {.stride = 1, .padding = dilation * (std::max<std::int64_t>(kernel_size, 1) - 1), .dilation = dilation, .groups = groups};
}

}  // namespace

template <class Options>
ConvModule<Options>::ConvModule(const char* module, std::int64_t in_channels, std::int64_t out_channels,
                                std::span<const std::int64_t> kernel_size, bool transposed, Generator& generator, const Options& options,
                                bool bias, std::optional<Engine> engine)
    : options_(options) {
  const Shape w = weight_shape(module, in_channels, out_channels, kernel_size, options.groups, transposed);
  weight_ = register_parameter("weight", init::default_weight(w, generator, engine));
  if (bias) bias_ = register_parameter("bias", init::default_bias(Shape{out_channels}, w, generator, engine));
}

template <class Options>
bool ConvModule<Options>::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

template class ConvModule<Conv1dOptions>;
template class ConvModule<Conv2dOptions>;
template class ConvModule<ConvTranspose1dOptions>;
template class ConvModule<ConvTranspose2dOptions>;

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, Generator& generator,
               const Conv1dOptions& options, bool bias, std::optional<Engine> engine)
    : ConvModule("Conv1d", in_channels, out_channels, std::array{kernel_size}, false, generator, options, bias, std::move(engine)) {}

CausalConv1d::CausalConv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, Generator& generator,
                           std::int64_t dilation, std::int64_t groups, bool bias, std::optional<Engine> engine)
    : Conv1d(in_channels, out_channels, kernel_size, generator, causal_options(kernel_size, dilation, groups), bias, std::move(engine)) {}

Matrix CausalConv1d::forward(const Matrix& x) {
  const Matrix y = Conv1d::forward(x);
  return options().padding == 0 ? y : matrix::narrow(y, 2, 0, x.shape().dim(2));
}

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::array<std::int64_t, 2> kernel_size,
               Generator& generator, const Conv2dOptions& options, bool bias, std::optional<Engine> engine)
    : ConvModule("Conv2d", in_channels, out_channels, kernel_size, false, generator, options, bias, std::move(engine)) {}

ConvTranspose1d::ConvTranspose1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
                                 Generator& generator, const ConvTranspose1dOptions& options, bool bias,
                                 std::optional<Engine> engine)
    : ConvModule("ConvTranspose1d", in_channels, out_channels, std::array{kernel_size}, true, generator, options, bias,
                 std::move(engine)) {}

ConvTranspose2d::ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels, std::array<std::int64_t, 2> kernel_size,
                                 Generator& generator, const ConvTranspose2dOptions& options, bool bias,
                                 std::optional<Engine> engine)
    : ConvModule("ConvTranspose2d", in_channels, out_channels, kernel_size, true, generator, options, bias, std::move(engine)) {}

}  // namespace oa::ml::nn
