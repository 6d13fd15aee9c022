#include "oa/ml/nn/embedding.hpp"

#include "oa/ml/init.hpp"
#include "oa/ml/functional.hpp"

namespace oa::ml::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& generator, std::optional<Engine> engine) {
  if (num_embeddings < 1 || embedding_dim < 1)
    fail(ErrorKind::InvalidArgument, "oa::ml::nn::Embedding: num_embeddings {} and embedding_dim {} must be >= 1", num_embeddings,
         embedding_dim);
  weight_ = register_parameter("weight", init::embedding_weight(Shape{num_embeddings, embedding_dim}, generator, engine));
}

Matrix Embedding::forward(const Matrix& indices) { return embedding(indices, weight_.value()); }

bool Embedding::rebind_parameter(const std::string&, const Parameter& p) {
  weight_ = p;
  return true;
}

Matrix Embedding::forward(std::span<const std::int32_t> indices, const Shape& shape) {
  return embedding(indices, shape, weight_.value());
}

}  // namespace oa::ml::nn
