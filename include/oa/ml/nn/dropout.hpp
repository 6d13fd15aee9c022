#pragma once
// torch.nn.Dropout over oa::ml::dropout (oa/ml/functional.hpp).
#include <cstdint>

#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// In training mode each forward zeroes elements with probability p and scales
// the rest by 1 / (1 - p), with a fresh mask per call: the k-th training call
// uses the k-th seed of a Generator seeded once from `generator` at
// construction, so a run is reproducible from its seed. In eval mode forward
// returns its input unchanged and records nothing. Throws InvalidArgument for
// p outside [0, 1].
class Dropout : public Module {
 public:
  Dropout(double p, Generator& generator);
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Dropout"; }
  double p() const { return p_; }

 private:
  double p_;
  Generator masks_;
};

}  // namespace oa::ml::nn
