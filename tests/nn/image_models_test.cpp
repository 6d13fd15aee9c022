// The image models of `oa train fashion-mnist` (apps/oa/models.cpp): the ViT
// against an f64 composition of the references, its parameter names and
// count, one AdamW step lowering its loss, and the model-kind errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models.hpp"
#include "oa/ml/nn/nn.hpp"
#include "oa/ml/optim.hpp"
#include "oa/oa.hpp"
#include "reference/conv.hpp"
#include "reference/transformer.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
namespace ref = oa::reference;

std::shared_ptr<oa::ml::nn::Module> vit(bool quick, std::uint64_t seed = 0) {
  oa::ml::Generator g(seed);
  return oa_cli::make_image_model({.kind = "vit", .quick = quick}, g, oa::Engine::default_engine());
}

std::vector<std::string> vit_names(std::int64_t depth) {
  std::vector<std::string> names{"pos", "patch.weight", "patch.bias"};
  for (std::int64_t i = 0; i < depth; ++i)
    for (const char* p : {"norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                          "norm2.weight", "norm2.bias", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"})
      names.push_back("blocks." + std::to_string(i) + "." + p);
  for (const char* p : {"norm.weight", "norm.bias", "head.weight", "head.bias"}) names.push_back(p);
  return names;
}

TEST(NnImageModel, VitNamesAndCounts) {
  const auto quick = vit(true);
  std::vector<std::string> names;
  for (const auto& [name, p] : quick->named_parameters()) {
    names.push_back(name);
    EXPECT_EQ(p.name(), name);
  }
  EXPECT_EQ(names, vit_names(2));
  const auto params = quick->named_parameters();
  EXPECT_EQ(params[0].second.shape(), Shape({49, 32}));
  EXPECT_EQ(params[1].second.shape(), Shape({32, 1, 4, 4}));
  EXPECT_EQ(params.back().second.shape(), Shape({10}));
  // D = 32, depth 2: patch 16D + D, pos 49D, blocks 2 (12D² + 13D), norm 2D, head 10D + 10.
  EXPECT_EQ(quick->parameter_count(), 544 + 1568 + 2 * (12 * 1024 + 13 * 32) + 64 + 330);
  EXPECT_EQ(quick->parameter_count(), 27914);
  // D = 128, depth 6.
  const auto full = vit(false);
  EXPECT_EQ(full->named_parameters().size(), vit_names(6).size());
  EXPECT_EQ(full->parameter_count(), 17 * 128 + 49 * 128 + 6 * (12 * 128 * 128 + 13 * 128) + 2 * 128 + 10 * 128 + 10);
  EXPECT_EQ(full->parameter_count(), 1199626);
  // The position embedding starts as N(0, 0.02).
  const auto pos = full->named_parameters()[0].second.value().to_vector();
  double sum = 0, squares = 0;
  for (float v : pos) sum += v, squares += static_cast<double>(v) * v;
  const double n = static_cast<double>(pos.size()), mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(squares / n - mean * mean), 0.02, 0.001);
}

// Patch tokens x.flatten(2).transpose(1, 2), plus pos, through the blocks,
// LayerNorm, the mean over tokens and the head, all in f64.
TEST(NnImageModel, VitForwardMatchesReference) {
  const auto model = vit(true, 3);
  const auto params = model->named_parameters();
  params[0].second.write(oa::test::test_values(49 * 32, 11));  // a position embedding large enough to matter
  const std::int64_t batch = 2, d = 32, tokens = 49;
  const std::vector<float> xs = oa::test::test_values(batch * 28 * 28, 12);
  const Matrix y = (*model)(Matrix::from_vector({batch, 1, 28, 28}, xs));
  ASSERT_EQ(y.shape(), Shape({batch, 10}));

  std::vector<ref::Vec> p;
  for (const auto& entry : params) p.push_back(::ref::to_f64(entry.second.value().to_vector()));
  std::array<std::int64_t, 4> conv_shape{};
  const ref::Vec conv = ref::conv2d(::ref::to_f64(xs), {batch, 1, 28, 28}, p[1], {d, 1, 4, 4}, p[2], {.stride = {4, 4}}, conv_shape);
  ASSERT_EQ(conv_shape, (std::array<std::int64_t, 4>{batch, d, 7, 7}));
  ref::Vec h(static_cast<std::size_t>(batch * tokens * d));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < tokens; ++s)
      for (std::int64_t c = 0; c < d; ++c)
        h[static_cast<std::size_t>((b * tokens + s) * d + c)] =
            conv[static_cast<std::size_t>((b * d + c) * tokens + s)] + p[0][static_cast<std::size_t>(s * d + c)];
  for (std::size_t block = 0; block < 2; ++block) {
    const std::size_t o = 3 + 12 * block;
    const ref::BlockParams bp{p[o],     p[o + 1], p[o + 2], p[o + 3],  p[o + 4],  p[o + 5],
                              p[o + 6], p[o + 7], p[o + 8], p[o + 9], p[o + 10], p[o + 11]};
    h = ref::transformer_block(h, batch, tokens, d, 2, false, bp);
  }
  h = ref::layer_norm(h, d, p[27], p[28], 1e-5);
  ref::Vec pooled(static_cast<std::size_t>(batch * d), 0.0);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < tokens; ++s)
      for (std::int64_t c = 0; c < d; ++c)
        pooled[static_cast<std::size_t>(b * d + c)] += h[static_cast<std::size_t>((b * tokens + s) * d + c)] / tokens;
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::linear(pooled, p[29], p[30], batch, d, 10), 1e-4, 1e-4));

  EXPECT_TRUE(oa_test::throws([&] { (*model)(Matrix::zeros({2, 1, 32, 32})); }, oa::ErrorKind::InvalidArgument,
                              {"VisionTransformer", "[B, 1, 28, 28]"}));
}

TEST(NnImageModel, VitAdamWStepLowersTheLoss) {
  const auto model = vit(true, 4);
  const Matrix x = Matrix::from_vector({4, 1, 28, 28}, oa::test::test_values(4 * 28 * 28, 13));
  const Matrix labels = Matrix::from_i32({4}, std::vector<std::int32_t>{0, 3, 7, 9});
  oa::ml::optim::AdamW optimizer(model->parameters(), {.lr = 1e-3f, .weight_decay = 0.05f});
  const Matrix loss = oa::ml::cross_entropy((*model)(x), labels);
  oa::backward(loss);
  for (const auto& [name, p] : model->named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  optimizer.step();
  const float before = loss.item();
  const float after = oa::ml::cross_entropy((*model)(x), labels).item();
  EXPECT_TRUE(std::isfinite(before));
  EXPECT_LT(after, before - 0.01f);
}

TEST(NnImageModel, UnknownKindIsRejected) {
  oa::ml::Generator g(0);
  EXPECT_TRUE(oa_test::throws([&] { oa_cli::make_image_model({.kind = "mlp"}, g, oa::Engine::default_engine()); },
                              oa::ErrorKind::InvalidArgument, {"unknown model \"mlp\"", "convnet or vit"}));
  const auto convnet = oa_cli::make_image_model({.kind = "convnet", .quick = true}, g, oa::Engine::default_engine());
  EXPECT_EQ((*convnet)(Matrix::zeros({3, 1, 28, 28})).shape(), Shape({3, 10}));
}

}  // namespace
