#pragma once
// Normalisation modules (torch.nn.LayerNorm and torch.nn.RMSNorm over the
// last axis, torch.nn.BatchNorm2d) over oa::ml::layer_norm, rms_norm and
// batch_norm_2d (oa/ml/norm.hpp). Affine parameters start at weight 1 and bias 0, as in
// PyTorch.
#include <cstdint>
#include <optional>

#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// Normalises each row of x [..., D] (the last axis only: normalized_shape =
// [D]). Parameters `weight` [D] and `bias` [D] when elementwise_affine (bias
// only if `bias` too). Throws InvalidArgument for D below 1 or eps below 0.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::int64_t normalized_dim, double eps = 1e-5, bool elementwise_affine = true, bool bias = true,
                     std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  const Parameter& weight() const { return weight_; }  // undefined without elementwise_affine
  const Parameter& bias() const { return bias_; }
  double eps() const { return eps_; }

 private:
  double eps_;
  Parameter weight_, bias_;
};

// RMS-normalises each row of x [..., D] (normalized_shape = [D]). Parameter
// `weight` [D] when elementwise_affine. eps: as oa::ml::rms_norm (unset: the
// f32 machine epsilon). Throws InvalidArgument for D below 1 or eps below 0.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(std::int64_t normalized_dim, std::optional<double> eps = {}, bool elementwise_affine = true,
                   std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "RMSNorm"; }
  const Parameter& weight() const { return weight_; }  // undefined without elementwise_affine
  std::optional<double> eps() const { return eps_; }

 private:
  std::optional<double> eps_;
  Parameter weight_;
};

// Normalises each channel of x [N, C, H, W]: with the batch statistics in
// training mode (updating the running statistics in place), with the running
// statistics in eval mode. Parameters `weight` [C] and `bias` [C] when affine;
// buffers `running_mean` [C] (zeros) and `running_var` [C] (ones).
// PyTorch's `num_batches_tracked` counter is not kept (it only matters for
// momentum = None, a cumulative average, which is not offered). Throws
// InvalidArgument for num_features below 1, eps below 0 or momentum outside [0, 1].
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(std::int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "BatchNorm2d"; }
  const Parameter& weight() const { return weight_; }  // undefined without affine
  const Parameter& bias() const { return bias_; }
  const Matrix& running_mean() const { return running_mean_; }
  const Matrix& running_var() const { return running_var_; }

 private:
  double eps_, momentum_;
  Parameter weight_, bias_;
  Matrix running_mean_, running_var_;
};

}  // namespace oa::ml::nn
