// A tiny ResNet in oa's public API: a stem (3x3 convolution, GroupNorm, ReLU), one basic block
// (He et al. 2016) with GroupNorm (Wu and He 2018) in place of BatchNorm:
// conv -> GroupNorm -> ReLU -> conv -> GroupNorm, plus the identity, -> ReLU,
// then global average pooling and a Linear classifier. It learns four
// textures of 8x8 single-channel images (horizontal stripes, vertical
// stripes, a checkerboard, flat) at random phases under noise, a few AdamW
// steps of the cross entropy. Prints the loss per step; exits non-zero
// unless the last loss is below half the first (a few seconds on lavapipe).
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "training.hpp"

namespace {

using oa::Matrix;
namespace nn = oa::ml::nn;

constexpr std::int64_t kClasses = 4, kChannels = 8, kGroups = 2, kSide = 8, kBatch = 16;

std::shared_ptr<nn::Conv2d> conv3x3(std::int64_t in, oa::ml::Generator& gen) {
  return std::make_shared<nn::Conv2d>(in, kChannels, std::array<std::int64_t, 2>{3, 3}, gen, oa::ml::Conv2dOptions{.padding = {1, 1}},
                                      false);
}

// images [N, 1, 8, 8] -> logits [N, classes].
class ResNet : public nn::Module {
 public:
  explicit ResNet(oa::ml::Generator& gen)
      : stem_(register_module("stem", conv3x3(1, gen))),
        stem_norm_(register_module("stem_norm", std::make_shared<nn::GroupNorm>(kGroups, kChannels))),
        conv1_(register_module("conv1", conv3x3(kChannels, gen))),
        norm1_(register_module("norm1", std::make_shared<nn::GroupNorm>(kGroups, kChannels))),
        conv2_(register_module("conv2", conv3x3(kChannels, gen))),
        norm2_(register_module("norm2", std::make_shared<nn::GroupNorm>(kGroups, kChannels))),
        head_(register_module("head", std::make_shared<nn::Linear>(kChannels, kClasses, gen))) {}
  Matrix forward(const Matrix& images) override {
    const Matrix x = oa::matrix::relu(stem_norm_->forward(stem_->forward(images)));
    const Matrix h = oa::matrix::relu(norm1_->forward(conv1_->forward(x)));
    const Matrix y = oa::matrix::relu(norm2_->forward(conv2_->forward(h)) + x);
    return head_->forward(oa::ml::global_avg_pool_2d(y));
  }
  std::string type_name() const override { return "ResNet"; }

 private:
  std::shared_ptr<nn::Conv2d> stem_;
  std::shared_ptr<nn::GroupNorm> stem_norm_;
  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::GroupNorm> norm1_;
  std::shared_ptr<nn::Conv2d> conv2_;
  std::shared_ptr<nn::GroupNorm> norm2_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

int main() {
  oa::ml::Generator gen(2024);
  ResNet model(gen);

  // kBatch / kClasses images of each texture, each at a random phase, plus noise.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> phase(0, 1);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> pixels;
  std::vector<std::int32_t> labels;
  for (std::int64_t n = 0; n < kBatch; ++n) {
    const auto label = static_cast<std::int32_t>(n % kClasses);
    const int p = phase(rng);
    for (std::int64_t r = 0; r < kSide; ++r)
      for (std::int64_t c = 0; c < kSide; ++c) {
        const std::int64_t stripe = label == 0 ? r : label == 1 ? c : label == 2 ? r + c : 0;
        pixels.push_back(static_cast<float>((stripe + p) % 2) + noise(rng));
      }
    labels.push_back(label);
  }
  const Matrix x = Matrix::from_vector({kBatch, 1, kSide, kSide}, pixels), y = Matrix::from_i32({kBatch}, labels);

  return examples::train_until_loss_halves("resnet_block", model, x, y, 25, 1e-2f);
}
