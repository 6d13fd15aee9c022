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

RMSNorm::RMSNorm(std::int64_t normalized_dim, std::optional<double> eps, bool elementwise_affine, std::optional<Engine> engine)
    : eps_(eps) {
  if (normalized_dim < 1 || (eps && !(*eps >= 0)))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::RMSNorm: normalized_dim {} must be >= 1 and eps {} >= 0", normalized_dim,
         eps ? fmt::format("{}", *eps) : std::string("(unset)"));
  if (elementwise_affine) weight_ = register_parameter("weight", init::ones(Shape{normalized_dim}, engine));
}

Matrix RMSNorm::forward(const Matrix& x) { return rms_norm(x, weight_.value(), eps_); }

BatchNorm2d::BatchNorm2d(std::int64_t num_features, double eps, double momentum, bool affine, std::optional<Engine> engine)
    : eps_(eps), momentum_(momentum) {
  if (num_features < 1 || !(eps >= 0) || !(momentum >= 0 && momentum <= 1))
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::BatchNorm2d: num_features {} must be >= 1, eps {} >= 0 and momentum {} in [0, 1]",
         num_features, eps, momentum);
  const Shape c{num_features};
  if (affine) {
    weight_ = register_parameter("weight", init::ones(c, engine));
    bias_ = register_parameter("bias", init::zeros(c, engine));
  }
  running_mean_ = register_buffer("running_mean", init::zeros(c, engine));
  running_var_ = register_buffer("running_var", init::ones(c, engine));
}

Matrix BatchNorm2d::forward(const Matrix& x) {
  return batch_norm_2d(x, weight_.value(), bias_.value(), running_mean_, running_var_, training(), momentum_, eps_);
}

}  // namespace oa::ml::nn
