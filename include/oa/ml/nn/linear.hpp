#pragma once
// torch.nn.Linear over oa::ml::linear (oa/ml/linear.hpp).
#include <cstdint>
#include <optional>

#include "oa/ml/generator.hpp"
#include "oa/ml/linear.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// torch.nn.Linear: parameters `weight` [out, in] and (with bias) `bias`
// [out], initialised as PyTorch does (kaiming-uniform with a = sqrt(5), i.e.
// U(-1/sqrt(in), 1/sqrt(in)), for both) from seeds drawn from `generator`
// (weight first). forward: x [..., in] -> [..., out].
// Throws InvalidArgument for in_features or out_features below 1.
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& generator, bool bias = true,
         std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Linear"; }

  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }  // undefined without bias

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  std::int64_t in_features_, out_features_;
  Parameter weight_, bias_;
};

}  // namespace oa::ml::nn
