#pragma once
// torch.nn.Embedding over oa::ml::embedding (oa/ml/functional.hpp).
#include <cstdint>
#include <optional>
#include <span>

#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

// A table of num_embeddings vectors of embedding_dim: parameter `weight`
// [num_embeddings, embedding_dim], initialised N(0, 1) as PyTorch does, from a
// seed drawn from `generator`. Throws InvalidArgument for extents below 1.
class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& generator, std::optional<Engine> engine = {});
  // indices i32 [...] -> [..., embedding_dim] (indices outside the table give
  // zero rows: they cannot be checked without a host round trip).
  Matrix forward(const Matrix& indices) override;
  // Indices from the host, shaped `shape`; each is checked (InvalidArgument
  // naming the position and value when outside [0, num_embeddings)).
  Matrix forward(std::span<const std::int32_t> indices, const Shape& shape);
  std::string type_name() const override { return "Embedding"; }
  const Parameter& weight() const { return weight_; }

 private:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

  Parameter weight_;
};

}  // namespace oa::ml::nn
