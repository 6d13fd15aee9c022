#pragma once
// Normalisation modules (torch.nn.LayerNorm and torch.nn.RMSNorm over the
// last axis, torch.nn.GroupNorm, torch.nn.InstanceNorm2d, torch.nn.BatchNorm1d
// and torch.nn.BatchNorm2d) over oa::ml::layer_norm, rms_norm, group_norm and
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
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

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
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  std::optional<double> eps_;
  Parameter weight_;
};

// Normalises x [N, C, *] over each (sample, group of num_channels /
// num_groups channels), oa::ml::group_norm. Parameters `weight` [C] and
// `bias` [C] when affine. Throws InvalidArgument for num_groups or
// num_channels below 1, num_groups not dividing num_channels, or eps below 0;
// forward throws what group_norm throws (x's C must equal num_channels).
class GroupNorm : public Module {
 public:
  GroupNorm(std::int64_t num_groups, std::int64_t num_channels, double eps = 1e-5, bool affine = true,
            std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "GroupNorm"; }
  const Parameter& weight() const { return weight_; }  // undefined without affine
  const Parameter& bias() const { return bias_; }
  std::int64_t num_groups() const { return num_groups_; }

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  std::int64_t num_groups_, num_channels_;
  double eps_;
  Parameter weight_, bias_;
};

// Normalises each (sample, channel) plane of x [N, C, H, W] over its H * W
// values (group_norm with one group per channel). As PyTorch's defaults:
// affine off (with it, `weight` [C] and `bias` [C]), and no running
// statistics (track_running_stats = false is the only mode offered), so
// training and eval behave alike. Throws InvalidArgument for num_features
// below 1 or eps below 0; forward for x not [N, num_features, H, W].
class InstanceNorm2d : public Module {
 public:
  explicit InstanceNorm2d(std::int64_t num_features, double eps = 1e-5, bool affine = false, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "InstanceNorm2d"; }
  const Parameter& weight() const { return weight_; }  // undefined without affine
  const Parameter& bias() const { return bias_; }

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  std::int64_t num_features_;
  double eps_;
  Parameter weight_, bias_;
};

// What BatchNorm1d and BatchNorm2d share (PyTorch's _BatchNorm): parameters
// `weight` [C] and `bias` [C] when affine; buffers `running_mean` [C] (zeros),
// `running_var` [C] (ones) and `num_batches_tracked` [] (i32 0; torch's is
// int64), the count of training forwards. In training mode the batch
// statistics normalise (and update the running statistics in place, the count
// incremented), in eval mode the running statistics. momentum nullopt
// (torch's None) updates them with momentum 1 / num_batches_tracked: their
// cumulative average over the batches. Count and statistics are updated on
// the GPU by oa::ml::batch_norm_2d (no host read or write: a training step
// can be captured by a StepGraph); a count written into the buffer (a loaded
// checkpoint) is where counting goes on.
// Throws InvalidArgument, naming the module, for num_features below 1, eps
// below 0 or momentum outside [0, 1].
class BatchNormBase : public Module {
 public:
  std::string type_name() const override { return type_; }  // "BatchNorm1d" or "BatchNorm2d"
  const Parameter& weight() const { return weight_; }  // undefined without affine
  const Parameter& bias() const { return bias_; }
  const Matrix& running_mean() const { return running_mean_; }
  const Matrix& running_var() const { return running_var_; }
  const Matrix& num_batches_tracked() const { return num_batches_tracked_; }

 protected:
  BatchNormBase(const char* type, std::int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                std::optional<Engine> engine);
  // oa::ml::batch_norm_2d of x [N, C, H, W] with this module's state and mode.
  Matrix normalize(const Matrix& x);

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  std::string type_;
  double eps_;
  std::optional<double> momentum_;
  Parameter weight_, bias_;
  Matrix running_mean_, running_var_, num_batches_tracked_;
};

// Normalises each channel of x [N, C] or [N, C, L] over its N (* L) values
// (batch_norm_2d of the view [N, C, L, 1]). Forward throws InvalidArgument
// naming "oa::ml::nn::BatchNorm1d" for x of another rank.
class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       std::optional<Engine> engine = {})
      : BatchNormBase("BatchNorm1d", num_features, eps, momentum, affine, engine) {}
  Matrix forward(const Matrix& x) override;
};

// Normalises each channel of x [N, C, H, W] over its N * H * W values.
class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       std::optional<Engine> engine = {})
      : BatchNormBase("BatchNorm2d", num_features, eps, momentum, affine, engine) {}
  Matrix forward(const Matrix& x) override { return normalize(x); }
};

}  // namespace oa::ml::nn
