#include "models.hpp"

#include "oa/ml/nn/nn.hpp"

namespace oa_cli {

namespace nn = oa::ml::nn;

// conv(3x3) blocks then a classifier (PyTorch-default initialisation):
//   full:  [1→32, ReLU, pool] [32→64, ReLU, pool] → 3136 → 128 → ReLU → 10
//   quick: [1→8, stride 2, ReLU] [8→16, stride 2, ReLU] → 784 → 10
std::shared_ptr<nn::Module> make_image_model(const ImageModelConfig& config, oa::ml::Generator& g, const oa::Engine& e) {
  if (config.kind != "convnet") oa::fail(oa::ErrorKind::InvalidArgument, "unknown model \"{}\" (expected convnet)", config.kind);
  const std::int64_t c1 = config.quick ? 8 : 32, c2 = config.quick ? 16 : 64, s = config.quick ? 2 : 1;
  const oa::ml::Conv2dOptions conv{.stride = {s, s}, .padding = {1, 1}};
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, c1, std::array<std::int64_t, 2>{3, 3}, g, conv, true, e));
  net->push_back(std::make_shared<nn::ReLU>());
  if (!config.quick) net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(c1, c2, std::array<std::int64_t, 2>{3, 3}, g, conv, true, e));
  net->push_back(std::make_shared<nn::ReLU>());
  if (!config.quick) net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  if (config.quick) {
    net->push_back(std::make_shared<nn::Linear>(c2 * 7 * 7, 10, g, true, e));
  } else {
    net->push_back(std::make_shared<nn::Linear>(c2 * 7 * 7, 128, g, true, e));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::Linear>(128, 10, g, true, e));
  }
  return net;
}

}  // namespace oa_cli
