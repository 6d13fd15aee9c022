#include "oa/ml/nn/norm.hpp"

#include "oa/ml/init.hpp"
#include "oa/ml/functional.hpp"

namespace oa::ml::nn {

LayerNorm::LayerNorm(std::int64_t normalized_dim, double eps, bool elementwise_affine, bool bias, std::optional<Engine> engine)
    : eps_(eps) {
  if (normalized_dim < 1 || !(eps >= 0))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::LayerNorm: normalized_dim {} must be >= 1 and eps {} >= 0", normalized_dim, eps);
  if (elementwise_affine) {
    weight_ = register_parameter("weight", init::ones(Shape{normalized_dim}, engine));
    if (bias) bias_ = register_parameter("bias", init::zeros(Shape{normalized_dim}, engine));
  }
}

Matrix LayerNorm::forward(const Matrix& x) { return layer_norm(x, weight_.value(), bias_.value(), eps_); }

bool LayerNorm::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

RMSNorm::RMSNorm(std::int64_t normalized_dim, std::optional<double> eps, bool elementwise_affine, std::optional<Engine> engine)
    : eps_(eps) {
  if (normalized_dim < 1 || (eps && !(*eps >= 0)))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::RMSNorm: normalized_dim {} must be >= 1 and eps {} >= 0", normalized_dim,
         eps ? fmt::format("{}", *eps) : std::string("(unset)"));
  if (elementwise_affine) weight_ = register_parameter("weight", init::ones(Shape{normalized_dim}, engine));
}

Matrix RMSNorm::forward(const Matrix& x) { return rms_norm(x, weight_.value(), eps_); }

bool RMSNorm::rebind_parameter(const std::string&, const Parameter& p) {
  weight_ = p;
  return true;
}

GroupNorm::GroupNorm(std::int64_t num_groups, std::int64_t num_channels, double eps, bool affine, std::optional<Engine> engine)
    : num_groups_(num_groups), num_channels_(num_channels), eps_(eps) {
  if (num_groups < 1 || num_channels < 1 || num_channels % num_groups != 0 || !(eps >= 0))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::GroupNorm: num_groups {} and num_channels {} must be >= 1, num_groups dividing num_channels, and eps {} >= 0",
         num_groups, num_channels, eps);
  if (affine) {
    weight_ = register_parameter("weight", init::ones(Shape{num_channels}, engine));
    bias_ = register_parameter("bias", init::zeros(Shape{num_channels}, engine));
  }
}

Matrix GroupNorm::forward(const Matrix& x) {
  if (x.rank() >= 2 && x.dim(1) != num_channels_)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::GroupNorm: x {} must have num_channels = {} channels (axis 1)", x.shape(), num_channels_);
  return group_norm(x, num_groups_, weight_.value(), bias_.value(), eps_);
}

bool GroupNorm::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

InstanceNorm2d::InstanceNorm2d(std::int64_t num_features, double eps, bool affine, std::optional<Engine> engine)
    : num_features_(num_features), eps_(eps) {
  if (num_features < 1 || !(eps >= 0))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::InstanceNorm2d: num_features {} must be >= 1 and eps {} >= 0", num_features, eps);
  if (affine) {
    weight_ = register_parameter("weight", init::ones(Shape{num_features}, engine));
    bias_ = register_parameter("bias", init::zeros(Shape{num_features}, engine));
  }
}

Matrix InstanceNorm2d::forward(const Matrix& x) {
  if (x.rank() != 4 || x.dim(1) != num_features_)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::InstanceNorm2d: x {} must be [N, {}, H, W]", x.shape(), num_features_);
  return group_norm(x, num_features_, weight_.value(), bias_.value(), eps_);
}

bool InstanceNorm2d::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

BatchNormBase::BatchNormBase(const char* type, std::int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             std::optional<Engine> engine)
    : type_(type), eps_(eps), momentum_(momentum) {
  if (num_features < 1) fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: num_features {} must be >= 1", type, num_features);
  if (!(eps >= 0)) fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: eps {} must be >= 0", type, eps);
  if (momentum && !(*momentum >= 0 && *momentum <= 1))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::{}: momentum {} must be in [0, 1] (or None)", type, *momentum);
  const Shape c{num_features};
  if (affine) {
    weight_ = register_parameter("weight", init::ones(c, engine));
    bias_ = register_parameter("bias", init::zeros(c, engine));
  }
  running_mean_ = register_buffer("running_mean", init::zeros(c, engine));
  running_var_ = register_buffer("running_var", init::ones(c, engine));
  num_batches_tracked_ = register_buffer("num_batches_tracked", Matrix::from_i32(Shape{}, std::vector<std::int32_t>{0}, engine));
}

Matrix BatchNormBase::normalize(const Matrix& x) {
  return batch_norm_2d(x, weight_.value(), bias_.value(), running_mean_, running_var_, training(), momentum_, eps_,
                       num_batches_tracked_);
}

bool BatchNormBase::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

Matrix BatchNorm1d::forward(const Matrix& x) {
  if (x.rank() != 2 && x.rank() != 3)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::BatchNorm1d: x {} must be [N, C] or [N, C, L]", x.shape());
  const std::int64_t length = x.rank() == 3 ? x.dim(2) : 1;
  const std::int64_t features = running_mean().numel();
  if (x.dim(1) != features)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::BatchNorm1d: x {} must have num_features = {} channels (axis 1)", x.shape(), features);
  if (training() && x.dim(0) * length == 1)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::BatchNorm1d: x {} has {} value per channel; training needs more than one",
         x.shape(), x.dim(0) * length);
  return normalize(x.reshape({x.dim(0), x.dim(1), length, 1})).reshape(x.shape().to_vector());
}

}  // namespace oa::ml::nn
