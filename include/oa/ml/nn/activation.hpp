#pragma once
// Elementwise activation modules (torch.nn.ReLU, GELU, SiLU, Tanh, Sigmoid) and
// Flatten (torch.nn.Flatten). None has parameters; each keeps its input's
// shape except Flatten.
#include <cstdint>

#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// max(x, 0) (oa::matrix::relu).
class ReLU : public Module {
 public:
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "ReLU"; }
};

// Exact GELU, x * Phi(x) (torch.nn.GELU(approximate='none'); oa::matrix::gelu).
class GELU : public Module {
 public:
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "GELU"; }
};

// x * sigmoid(x) (torch.nn.SiLU; oa::matrix::silu).
class SiLU : public Module {
 public:
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "SiLU"; }
};

// tanh(x) (oa::matrix::tanh).
class Tanh : public Module {
 public:
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Tanh"; }
};

// 1 / (1 + exp(-x)) (oa::matrix::sigmoid).
class Sigmoid : public Module {
 public:
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Sigmoid"; }
};

// Merges axes start_dim..end_dim (inclusive; negative counts from the end)
// into one, as torch.nn.Flatten (default start_dim 1: [N, C, H, W] ->
// [N, C*H*W]): oa::matrix::flatten, a zero-copy reshape, whose errors it throws.
class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Flatten"; }

 private:
  int start_dim_, end_dim_;
};

}  // namespace oa::ml::nn
