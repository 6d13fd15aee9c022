#pragma once
// torch.nn.Sequential: child modules named "0", "1", ... applied in order.
#include <memory>
#include <vector>

#include "oa/ml/nn/module.hpp"

namespace oa::ml::nn {

class Sequential : public Module {
 public:
  Sequential() = default;
  // Throws InvalidArgument for a null layer.
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& layers);

  // Appends `layer` as the child named by its position; returns *this.
  Sequential& push_back(std::shared_ptr<Module> layer);
  // Each layer's forward on the previous one's output; the input itself when empty.
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "Sequential"; }

  std::size_t size() const { return named_children().size(); }
  // Layer i; throws InvalidArgument past the end.
  const std::shared_ptr<Module>& operator[](std::size_t i) const;
};

}  // namespace oa::ml::nn
