#pragma once
// Convolution modules (torch.nn.Conv1d, Conv2d, ConvTranspose1d,
// ConvTranspose2d) over the functions of oa/ml/conv.hpp, whose options,
// layouts and output-size formulas they take as they are.
//
// Parameters: `weight` (OIK / OIHW for convolutions: [out, in / groups, k...];
// IOK / IOHW for transposed convolutions: [in, out / groups, k...]) and, with
// bias, `bias` [out]. Initialised as PyTorch's _ConvNd.reset_parameters:
// kaiming-uniform with a = sqrt(5) for the weight, U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) for the bias, fan_in = weight.shape[1] * prod(kernel), from
// seeds drawn from `generator` (weight first).
//
// Constructors throw InvalidArgument naming the module for channel counts or
// kernel extents below 1, groups below 1, or channel counts not divisible by
// groups; forward throws what the conv function throws.
#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "oa/ml/conv.hpp"
#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// What the convolution modules share (torch.nn's _ConvNd): their options,
// weight and bias.
template <class Options>
class ConvModule : public Module {
 public:
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }  // undefined without bias
  const Options& options() const { return options_; }

 protected:
  // Checks the sizes (errors naming `module`) and registers the parameters;
  // `transposed`: the weight is IOK / IOHW.
  ConvModule(const char* module, std::int64_t in_channels, std::int64_t out_channels, std::span<const std::int64_t> kernel_size,
             bool transposed, Generator& generator, const Options& options, bool bias, std::optional<Engine> engine);

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  Options options_;
  Parameter weight_, bias_;
};

// forward: x [N, in, L] -> [N, out, L_out] (conv_1d).
class Conv1d : public ConvModule<Conv1dOptions> {
 public:
  Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, Generator& generator,
         const Conv1dOptions& options = {}, bool bias = true, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override { return conv_1d(x, weight(), bias(), options()); }
  std::string type_name() const override { return "Conv1d"; }
};

// forward: x [N, in, H, W] -> [N, out, H_out, W_out] (conv_2d). kernel_size is {KH, KW}.
class Conv2d : public ConvModule<Conv2dOptions> {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::array<std::int64_t, 2> kernel_size, Generator& generator,
         const Conv2dOptions& options = {}, bool bias = true, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override { return conv_2d(x, weight(), bias(), options()); }
  std::string type_name() const override { return "Conv2d"; }
};

// Causal 1-d convolution (WaveNet, van den Oord et al. 2016; temporal
// convolutional networks, Bai et al. 2018): forward x [N, in, L] -> [N, out,
// L], where output t reads inputs t - dilation * (K - 1) .. t only (zeros
// before the start). Stride 1. A Conv1d with padding dilation * (K - 1) whose
// last dilation * (K - 1) outputs are dropped (one narrow copy), so its
// parameters, init and errors are Conv1d's; the constructor also throws
// InvalidArgument naming CausalConv1d for a dilation below 1.
class CausalConv1d : public Conv1d {
 public:
  CausalConv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, Generator& generator,
               std::int64_t dilation = 1, std::int64_t groups = 1, bool bias = true, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "CausalConv1d"; }
};

// forward: x [N, in, L] -> [N, out, L_out] (conv_transpose_1d).
class ConvTranspose1d : public ConvModule<ConvTranspose1dOptions> {
 public:
  ConvTranspose1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, Generator& generator,
                  const ConvTranspose1dOptions& options = {}, bool bias = true, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override { return conv_transpose_1d(x, weight(), bias(), options()); }
  std::string type_name() const override { return "ConvTranspose1d"; }
};

// forward: x [N, in, H, W] -> [N, out, H_out, W_out] (conv_transpose_2d). kernel_size is {KH, KW}.
class ConvTranspose2d : public ConvModule<ConvTranspose2dOptions> {
 public:
  ConvTranspose2d(std::int64_t in_channels, std::int64_t out_channels, std::array<std::int64_t, 2> kernel_size,
                  Generator& generator, const ConvTranspose2dOptions& options = {}, bool bias = true,
                  std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override { return conv_transpose_2d(x, weight(), bias(), options()); }
  std::string type_name() const override { return "ConvTranspose2d"; }
};

extern template class ConvModule<Conv1dOptions>;
extern template class ConvModule<Conv2dOptions>;
extern template class ConvModule<ConvTranspose1dOptions>;
extern template class ConvModule<ConvTranspose2dOptions>;

}  // namespace oa::ml::nn
