#include "models.hpp"

#include "oa/ml/nn/nn.hpp"

namespace oa_cli {

namespace nn = oa::ml::nn;

namespace {

// conv(3x3) blocks then a classifier (PyTorch-default initialisation):
//   full:  [1→32, ReLU, pool] [32→64, ReLU, pool] → 3136 → 128 → ReLU → 10
//   quick: [1→8, stride 2, ReLU] [8→16, stride 2, ReLU] → 784 → 10
std::shared_ptr<nn::Module> make_convnet(bool quick, oa::ml::Generator& g, const oa::Engine& e) {
  const std::int64_t c1 = quick ? 8 : 32, c2 = quick ? 16 : 64, s = quick ? 2 : 1;
  const oa::ml::Conv2dOptions conv{.stride = {s, s}, .padding = {1, 1}};
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, c1, std::array<std::int64_t, 2>{3, 3}, g, conv, true, e));
  net->push_back(std::make_shared<nn::ReLU>());
  if (!quick) net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Conv2d>(c1, c2, std::array<std::int64_t, 2>{3, 3}, g, conv, true, e));
  net->push_back(std::make_shared<nn::ReLU>());
  if (!quick) net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  if (quick) {
    net->push_back(std::make_shared<nn::Linear>(c2 * 7 * 7, 10, g, true, e));
  } else {
    net->push_back(std::make_shared<nn::Linear>(c2 * 7 * 7, 128, g, true, e));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::Linear>(128, 10, g, true, e));
  }
  return net;
}

// A small Vision Transformer (Dosovitskiy et al. 2021) for x [B, 1, 28, 28]:
//   patch: Conv2d(1, D, 4x4, stride 4) → [B, D, 7, 7] → tokens [B, 49, D]
//   + pos, a learned [49, D] position embedding, N(0, 0.02)
//   depth pre-norm TransformerBlocks (D, heads; bidirectional, no dropout)
//   norm: LayerNorm(D), the mean over the 49 tokens (no class token),
//   head: Linear(D, 10) → logits [B, 10].
// Parameters: pos, patch.*, blocks.<i>.*, norm.*, head.* (PyTorch's names for
// the same module tree), 17D + 49D + depth (12D² + 13D) + 2D + 10D + 10 in all.
class VisionTransformer final : public nn::Module {
 public:
  static constexpr std::int64_t kImage = 28, kPatch = 4, kTokens = (kImage / kPatch) * (kImage / kPatch);

  VisionTransformer(std::int64_t width, std::int64_t heads, std::int64_t depth, oa::ml::Generator& g, const oa::Engine& e)
      : width_(width) {
    patch_ = register_module("patch", std::make_shared<nn::Conv2d>(1, width, std::array<std::int64_t, 2>{kPatch, kPatch}, g,
                                                                    oa::ml::Conv2dOptions{.stride = {kPatch, kPatch}}, true, e));
    pos_ = register_parameter("pos", oa::ml::init::normal({kTokens, width}, 0.0f, 0.02f, g, e));
    // Filled before it is registered, so that its parameters are named "blocks.<i>.…".
    auto blocks = std::make_shared<nn::Sequential>();
    for (std::int64_t i = 0; i < depth; ++i)
      blocks->push_back(std::make_shared<nn::TransformerBlock>(width, heads, g, false, 0.0, e));
    blocks_ = register_module("blocks", blocks);
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(width, 1e-5, true, true, e));
    head_ = register_module("head", std::make_shared<nn::Linear>(width, 10, g, true, e));
  }

  oa::Matrix forward(const oa::Matrix& x) override {
    if (x.rank() != 4 || x.dim(1) != 1 || x.dim(2) != kImage || x.dim(3) != kImage || x.dim(0) < 1)
      oa::fail(oa::ErrorKind::InvalidArgument, "VisionTransformer: x must be [B, 1, {}, {}] with B >= 1; found {}", kImage, kImage,
               x.shape());
    const std::int64_t b = x.dim(0);
    // [B, D, 7, 7] → [B, D, 49] → [B, 49, D] (torch: x.flatten(2).transpose(1, 2))
    oa::Matrix tokens = oa::matrix::transpose((*patch_)(x).reshape({b, width_, kTokens})) + pos_.value();
    oa::Matrix h = (*norm_)((*blocks_)(tokens));
    // The mean over the tokens: [B, 49, D] → [B, D, 49] → [B, D].
    return (*head_)(oa::matrix::mean(oa::matrix::transpose(h)));
  }
  std::string type_name() const override { return "VisionTransformer"; }

 private:
  std::int64_t width_;
  std::shared_ptr<nn::Conv2d> patch_;
  oa::ml::Parameter pos_;
  std::shared_ptr<nn::Sequential> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

std::shared_ptr<nn::Module> make_image_model(const ImageModelConfig& config, oa::ml::Generator& g, const oa::Engine& e) {
  if (config.kind == "convnet") return make_convnet(config.quick, g, e);
  // full: D 128, 4 heads, 6 blocks; quick: D 32, 2 heads, 2 blocks.
  if (config.kind == "vit")
    return config.quick ? std::make_shared<VisionTransformer>(32, 2, 2, g, e)
                        : std::make_shared<VisionTransformer>(128, 4, 6, g, e);
  oa::fail(oa::ErrorKind::InvalidArgument, "unknown model \"{}\" (expected convnet or vit)", config.kind);
}

}  // namespace oa_cli

namespace oa_cli {
namespace {

class CharTransformer final : public nn::Module {
 public:
  CharTransformer(const TextModelConfig& c, oa::ml::Generator& g, const oa::Engine& e) : config_(c), engine_(e) {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(256, c.width, g, e));
    pos_ = register_module("pos", std::make_shared<nn::Embedding>(c.context, c.width, g, e));
    auto blocks = std::make_shared<nn::Sequential>();  // filled first, so that its parameters are named "blocks.<i>.…"
    for (std::int64_t i = 0; i < c.layers; ++i) blocks->push_back(std::make_shared<nn::TransformerBlock>(c.width, c.heads, g, true, 0.0, e));
    blocks_ = register_module("blocks", blocks);
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(c.width, 1e-5, true, true, e));
    head_ = register_module("head", std::make_shared<nn::Linear>(c.width, 256, g, true, e));
  }

  oa::Matrix forward(const oa::Matrix& tokens) override {
    const std::int64_t t = tokens.dim(-1);
    if (tokens.rank() != 2 || t > config_.context)
      oa::fail(oa::ErrorKind::InvalidArgument, "CharTransformer: tokens must be [B, T] with T <= {}; found {}", config_.context,
               tokens.shape());
    if (!positions_.defined() || positions_.numel() != t) {  // 0 .. T-1, uploaded once per window length
      std::vector<std::int32_t> p(static_cast<std::size_t>(t));
      for (std::int32_t i = 0; i < t; ++i) p[static_cast<std::size_t>(i)] = i;
      positions_ = oa::Matrix::from_i32({t}, p, engine_);
    }
    oa::Matrix x = (*tok_)(tokens) + (*pos_)(positions_);
    return (*head_)((*norm_)((*blocks_)(x)));
  }
  std::string type_name() const override { return "CharTransformer"; }

 private:
  TextModelConfig config_;
  oa::Engine engine_;
  oa::Matrix positions_;
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
