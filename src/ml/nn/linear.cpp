// The Linear module over oa::ml::linear.
#include "oa/ml/nn/linear.hpp"

#include "oa/ml/init.hpp"

namespace oa::ml::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Generator& generator, bool bias,
               std::optional<Engine> engine)
    : in_features_(in_features), out_features_(out_features) {
  if (in_features < 1 || out_features < 1)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::Linear: in_features {} and out_features {} must be >= 1", in_features,
         out_features);
  const Shape w{out_features, in_features};
  weight_ = register_parameter("weight", init::default_weight(w, generator, engine));
  if (bias) bias_ = register_parameter("bias", init::default_bias(Shape{out_features}, w, generator, engine));
}

Matrix Linear::forward(const Matrix& x) { return linear(x, weight_.value(), bias_.value()); }

bool Linear::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "weight" ? weight_ : bias_) = p;
  return true;
}

}  // namespace oa::ml::nn
