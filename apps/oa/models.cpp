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

namespace oa_cli {
namespace {

class CharTransformer final : public nn::Module {
 public:
  CharTransformer(const TextModelConfig& c, oa::ml::Generator& g, const oa::Engine& e) : config_(c), engine_(e) {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(256, c.width, g, e));
    pos_ = register_module("pos", std::make_shared<nn::Embedding>(c.context, c.width, g, e));
    blocks_ = register_module("blocks", std::make_shared<nn::Sequential>());
    for (std::int64_t i = 0; i < c.layers; ++i) blocks_->push_back(std::make_shared<nn::TransformerBlock>(c.width, c.heads, g, true, 0.0, e));
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(c.width, 1e-5, true, true, e));
    head_ = register_module("head", std::make_shared<nn::Linear>(c.width, 256, g, true, e));
  }

  oa::Matrix forward(const oa::Matrix& tokens) override {
    const std::int64_t t = tokens.dim(-1);
    if (tokens.rank() != 2 || t > config_.context)
      oa::fail(oa::ErrorKind::InvalidArgument, "CharTransformer: tokens must be [B, T] with T <= {}; found {}", config_.context,
               tokens.shape());
    std::vector<std::int32_t> positions(static_cast<std::size_t>(t));
    for (std::int32_t i = 0; i < t; ++i) positions[static_cast<std::size_t>(i)] = i;
    oa::Matrix x = (*tok_)(tokens) + (*pos_)(oa::Matrix::from_i32({t}, positions, engine_));
    return (*head_)((*norm_)((*blocks_)(x)));
  }
  std::string type_name() const override { return "CharTransformer"; }

 private:
  TextModelConfig config_;
  oa::Engine engine_;
  std::shared_ptr<nn::Embedding> tok_, pos_;
  std::shared_ptr<nn::Sequential> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

std::shared_ptr<nn::Module> make_text_model(const TextModelConfig& config, oa::ml::Generator& generator, const oa::Engine& engine) {
  if (config.width % config.heads)
    oa::fail(oa::ErrorKind::InvalidArgument, "--width {} is not divisible by --heads {}", config.width, config.heads);
  return std::make_shared<CharTransformer>(config, generator, engine);
}

}  // namespace oa_cli
