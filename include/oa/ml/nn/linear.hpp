#pragma once
// Affine layers: the fused op linear() and the module Linear
// (torch.nn.functional.linear, torch.nn.Linear).
#include <cstdint>
#include <optional>

#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// y = x W^T + b (torch.nn.functional.linear): x [..., in] (rank >= 1), weight
// [out, in], bias [out] or undefined (no bias) -> y [..., out]. One GEMM whose
// epilogue adds the bias. Gradients for x, weight and bias, recorded as one
// backward op (two GEMMs for x and weight; the bias gradient is the column sum
// of the output gradient, oa::matrix::sum_to). Zero rows give an empty result;
// in = 0 gives the bias broadcast (or zeros).
// Errors: InvalidArgument naming "oa::ml::nn::linear" and the shapes for an
// undefined or non-f32 operand, rank-0 x, weight not rank 2, x's last extent
// not weight's in, bias not [out], operands on different engines.
// Semantic op "oa::ml::nn::linear".
Matrix linear(const Matrix& x, const Matrix& weight, const Matrix& bias = Matrix());

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
  std::int64_t in_features_, out_features_;
  Parameter weight_, bias_;
};

}  // namespace oa::ml::nn
