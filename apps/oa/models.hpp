#pragma once
// The models `oa train` builds: a convnet and a small ViT for 28x28 images.
#include <memory>
#include <string>

#include "oa/oa.hpp"
#include "oa/ml/generator.hpp"
#include "oa/ml/nn/module.hpp"

namespace oa_cli {

struct ImageModelConfig {
  std::string kind = "convnet";  // convnet | vit
  bool quick = false;            // a much smaller network, for CPU devices
};

// Builds the model on `engine`, initialised as PyTorch does by default from
// `generator` (the ViT's position embedding: N(0, 0.02)). forward: images
// [B, 1, 28, 28] (NCHW, normalised) -> logits [B, 10].
//   convnet: two 3x3 convolution blocks and a classifier (models.cpp);
//   vit:     4x4 patches, a learned position embedding, pre-norm transformer
//            blocks, mean pooling over the 49 tokens, a linear head; width 128,
//            4 heads, 6 blocks (quick: 32, 2, 2).
// Throws InvalidArgument naming the kind for one other than convnet or vit.
std::shared_ptr<oa::ml::nn::Module> make_image_model(const ImageModelConfig& config, oa::ml::Generator& generator,
                                                     const oa::Engine& engine);

}  // namespace oa_cli

namespace oa_cli {

struct TextModelConfig {
  std::int64_t context = 128, layers = 4, heads = 4, width = 128;
};

// A character-level (byte) transformer: token + position embeddings, pre-norm
// causal TransformerBlocks (flash attention), a final LayerNorm and a linear
// head to 256 byte logits. forward: tokens i32 [B, T] (T <= context) -> [B, T, 256].
std::shared_ptr<oa::ml::nn::Module> make_text_model(const TextModelConfig& config, oa::ml::Generator& generator,
                                                    const oa::Engine& engine);

}  // namespace oa_cli
