#include "oa/ml/nn/sequential.hpp"

#include <string>

namespace oa::ml::nn {

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& layers) {
  for (const auto& layer : layers) push_back(layer);
}

Sequential& Sequential::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(size()), std::move(layer));
  return *this;
}

Matrix Sequential::forward(const Matrix& x) {
  Matrix y = x;
  for (const auto& [name, layer] : named_children()) y = layer->forward(y);
  return y;
}

const std::shared_ptr<Module>& Sequential::operator[](std::size_t i) const {
  if (i >= size()) fail(ErrorKind::InvalidArgument, "oa::ml::nn::Sequential: layer {} of {}", i, size());
  return named_children()[i].second;
}

}  // namespace oa::ml::nn
