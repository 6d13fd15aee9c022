// MultiHeadAttention and TransformerBlock against the f64 reference
// compositions, with gradients of the input and every parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "oa/ml/nn/attention.hpp"
#include "oa/ml/nn/sequential.hpp"
#include "oa/oa.hpp"
#include "reference/transformer.hpp"
#include "support/expect.hpp"
#include "support/module_check.hpp"

namespace {

using namespace oa::test::module_names;
namespace ref = oa::reference;

TEST(NnAttention, MultiHeadAttentionMatchesReference) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(testing::Message() << "causal " << causal);
    oa::ml::Generator g(1);
    MultiHeadAttention mha(8, 2, g, causal);
    EXPECT_EQ(mha.parameter_count(), 3 * 64 + 24 + 64 + 8);
    oa::TraceCapture trace(Matrix::zeros({1}).engine());
    const Matrix y = oa::test::module_gradcheck(mha, oa::test::random_input({2, 5, 8}, 2), [&](const Args& v) {
      return ref::multi_head_attention(v[0], 2, 5, 8, 2, causal, v[1], v[2], v[3], v[4]);
    });
    EXPECT_EQ(y.shape(), Shape({2, 5, 8}));
    // One fused projection split into heads in one pass, the flash path, no
    // materialised probabilities.
    std::vector<std::string> forward;
    for (const auto& op : trace.ops())
      if (!op.backward) forward.push_back(op.name);
    auto count = [&](const char* name) { return std::count(forward.begin(), forward.end(), name); };
    EXPECT_EQ(count("oa::ml::linear"), 2);
    EXPECT_EQ(count("oa::ml::split_qkv_heads"), 1);
    EXPECT_EQ(count("oa::ml::split_heads"), 0);
    EXPECT_EQ(count("oa::ml::scaled_dot_product_attention"), 1);
    EXPECT_EQ(count("oa::ml::softmax_scaled_masked"), 0);
  }
}

TEST(NnAttention, DropoutActsOnTheProbabilitiesInTrainingOnly) {
  const std::uint64_t seed = 3;
  oa::ml::Generator g(seed);
  MultiHeadAttention mha(8, 4, g, true, 0.5);
  // The k-th training forward uses the k-th seed of a Generator seeded with the
  // first seed drawn from `g` (before the projections' seeds).
  oa::ml::Generator masks(oa::ml::Generator(seed).next_seed());
  const auto xv = oa::test::test_values(2 * 3 * 8, 4);
  const Matrix x = Matrix::from_vector({2, 3, 8}, xv);
  std::vector<ref::Vec> p;
  for (const auto& [name, param] : mha.named_parameters()) {
    const auto v = param.value().to_vector();
    p.emplace_back(v.begin(), v.end());
  }
  const ref::Vec xd(xv.begin(), xv.end());
  mha.eval();
  EXPECT_TRUE(oa_test::near(mha(x).to_vector(), ref::multi_head_attention(xd, 2, 3, 8, 4, true, p[0], p[1], p[2], p[3]), 1e-5, 1e-4));
  mha.train();
  const Matrix y1 = mha(x), y2 = mha(x);
  const std::uint64_t seed1 = masks.next_seed(), seed2 = masks.next_seed();
  EXPECT_TRUE(oa_test::near(y1.to_vector(), ref::multi_head_attention(xd, 2, 3, 8, 4, true, p[0], p[1], p[2], p[3], 0.5, seed1),
                            1e-5, 1e-4));
  EXPECT_TRUE(oa_test::near(y2.to_vector(), ref::multi_head_attention(xd, 2, 3, 8, 4, true, p[0], p[1], p[2], p[3], 0.5, seed2),
                            1e-5, 1e-4));
  // The materialised path with dropout is differentiable like the flash one.
  const auto input = oa::test::random_input({2, 3, 8}, 5);
  const std::uint64_t seed3 = masks.next_seed();
  oa::test::ModuleCheckOptions options;
  options.randomize_parameters = false;
  oa::test::module_gradcheck(
      mha, input,
      [&](const Args& v) { return ref::multi_head_attention(v[0], 2, 3, 8, 4, true, v[1], v[2], v[3], v[4], 0.5, seed3); },
      options);
}

TEST(NnAttention, TransformerBlockMatchesReference) {
  oa::ml::Generator g(5);
  TransformerBlock block(8, 2, g, true);
  const Matrix y = oa::test::module_gradcheck(block, oa::test::random_input({2, 3, 8}, 6), [&](const Args& v) {
    const ref::BlockParams p{v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]};
    return ref::transformer_block(v[0], 2, 3, 8, 2, true, p);
  });
  EXPECT_EQ(y.shape(), Shape({2, 3, 8}));
}

// A model with a stack of blocks, as a small GPT would hold them.
class Stack : public Module {
 public:
  Stack(std::int64_t d, std::int64_t heads, std::int64_t depth, oa::ml::Generator& g) {
    auto blocks = std::make_shared<Sequential>();
    for (std::int64_t i = 0; i < depth; ++i) blocks->push_back(std::make_shared<TransformerBlock>(d, heads, g, true));
    blocks_ = register_module("blocks", blocks);
    norm_ = register_module("norm", std::make_shared<LayerNorm>(d));
  }
  Matrix forward(const Matrix& x) override { return norm_->forward(blocks_->forward(x)); }
  std::string type_name() const override { return "Stack"; }

 private:
  std::shared_ptr<Sequential> blocks_;
  std::shared_ptr<LayerNorm> norm_;
};

TEST(NnAttention, TransformerBlockNamesAndCount) {
  oa::ml::Generator g(1);
  TransformerBlock block(8, 2, g);
  EXPECT_EQ(names_of(block.named_parameters()),
            (std::vector<std::string>{"norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
                                      "attn.proj.bias", "norm2.weight", "norm2.bias", "mlp.0.weight", "mlp.0.bias",
                                      "mlp.2.weight", "mlp.2.bias"}));
  EXPECT_EQ(block.parameter_count(), 12 * 8 * 8 + 13 * 8);
  const auto shapes = block.named_parameters();
  EXPECT_EQ(shapes[2].second.shape(), Shape({24, 8}));
  EXPECT_EQ(shapes[8].second.shape(), Shape({32, 8}));
  EXPECT_EQ(shapes[10].second.shape(), Shape({8, 32}));
  for (const auto& [name, p] : shapes) EXPECT_EQ(p.name(), name);
}

TEST(NnAttention, HierarchicalNamesThroughSequential) {
  oa::ml::Generator g(2);
  Stack model(4, 2, 2, g);
  const auto names = names_of(model.named_parameters());
  ASSERT_EQ(names.size(), 2u * 12 + 2);
  EXPECT_EQ(names[2], "blocks.0.attn.qkv.weight");
  EXPECT_EQ(names[12 + 5], "blocks.1.attn.proj.bias");
  EXPECT_EQ(names.back(), "norm.bias");
  EXPECT_EQ(model.parameter_count(), 2 * (12 * 16 + 13 * 4) + 2 * 4);
  EXPECT_EQ(model.parameters().size(), names.size());
  const auto modules = model.named_modules();
  EXPECT_EQ(modules.front().first, "blocks");
  EXPECT_EQ(modules[1].first, "blocks.0");
  EXPECT_EQ(modules[1].second->type_name(), "TransformerBlock");
  EXPECT_EQ(modules[3].first, "blocks.0.attn");
  EXPECT_EQ(modules[4].first, "blocks.0.attn.qkv");
}

// Cross-attention through forward(query, key, value, key_padding_mask,
// attn_mask) as a one-input module (the query), so that module_gradcheck
// checks the query's and every parameter's gradient.
class MaskedAttention : public Module {
 public:
  MaskedAttention(std::shared_ptr<MultiHeadAttention> mha, Matrix key, Matrix value, Matrix key_padding_mask, Matrix attn_mask)
      : mha_(register_module("attn", std::move(mha))), key_(key), value_(value), key_padding_mask_(key_padding_mask), attn_mask_(attn_mask) {}
  Matrix forward(const Matrix& query) override { return (*mha_)(query, key_, value_, key_padding_mask_, attn_mask_); }
  std::string type_name() const override { return "MaskedAttention"; }

 private:
  std::shared_ptr<MultiHeadAttention> mha_;
  Matrix key_, value_, key_padding_mask_, attn_mask_;
};

// torch.nn.MultiheadAttention's masks: a Bool key_padding_mask [B, Sk] (true
// = ignored) with a Bool attn_mask [Sq, Sk] (true = not allowed), then a F32
// attn_mask [B * H, Sq, Sk] with causal, against the reference with the
// equivalent additive mask [B * H * Sq, Sk].
TEST(NnAttention, MultiHeadAttentionKeyPaddingAndAttnMasks) {
  const std::int64_t B = 2, H = 2, Sq = 3, Sk = 4, D = 8;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::uint8_t> padding{0, 0, 1, 0, 0, 1, 1, 0};  // batch 0 ignores key 2, batch 1 keys 1 and 2
  const std::vector<std::uint8_t> allowed{0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};  // true = query i may not see key j
  const auto key = oa::test::test_values(B * Sk * D, 21), value = oa::test::test_values(B * Sk * D, 22);
  const auto additive = oa::test::test_values(B * H * Sq * Sk, 23);
  for (bool bool_masks : {true, false}) {
    SCOPED_TRACE(testing::Message() << (bool_masks ? "bool masks" : "f32 attn_mask, causal"));
    oa::ml::Generator g(5);
    auto mha = std::make_shared<MultiHeadAttention>(D, H, g, !bool_masks);
    ref::Vec mask(static_cast<std::size_t>(B * H * Sq * Sk));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < Sq; ++i)
          for (std::int64_t j = 0; j < Sk; ++j) {
            const std::size_t at = static_cast<std::size_t>(((b * H + h) * Sq + i) * Sk + j);
            mask[at] = bool_masks ? (padding[static_cast<std::size_t>(b * Sk + j)] != 0 || allowed[static_cast<std::size_t>(i * Sk + j)] != 0 ? -inf : 0.0)
                                  : additive[at];
          }
    const Matrix attn_mask = bool_masks ? Matrix::from_bool({Sq, Sk}, allowed)
                                        : Matrix::from_vector({B * H, Sq, Sk}, additive);
    MaskedAttention module(mha, Matrix::from_vector({B, Sk, D}, key), Matrix::from_vector({B, Sk, D}, value),
                           bool_masks ? Matrix::from_bool({B, Sk}, padding) : Matrix(), attn_mask);
    const ref::Vec kd(key.begin(), key.end()), vd(value.begin(), value.end());
    const Matrix y = oa::test::module_gradcheck(module, oa::test::random_input({B, Sq, D}, 24), [&](const Args& v) {
      return ref::multi_head_attention(v[0], kd, vd, B, Sq, Sk, D, H, !bool_masks, mask, v[1], v[2], v[3], v[4]);
    });
    EXPECT_EQ(y.shape(), Shape({B, Sq, D}));
  }
}

// kdim and vdim other than embed_dim: torch's separate q, k and v projection
// weights with in_proj_bias, under torch's names and in its order, through
// the same attention as the fused form (bool masks, then an F32 attn_mask
// with causal, as above); the weights returned with forward's output; a new
// Parameter in place of one; shape errors name the argument.
TEST(NnAttention, KdimVdim) {
  const std::int64_t B = 2, H = 2, Sq = 3, Sk = 4, D = 8, KD = 6, VD = 5;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::uint8_t> padding{0, 0, 1, 0, 0, 1, 1, 0};
  const auto key = oa::test::test_values(B * Sk * KD, 31), value = oa::test::test_values(B * Sk * VD, 32);
  const auto additive = oa::test::test_values(B * H * Sq * Sk, 33);
  const ref::Vec kd(key.begin(), key.end()), vd(value.begin(), value.end());
  for (bool bool_masks : {true, false}) {
    SCOPED_TRACE(testing::Message() << (bool_masks ? "bool key_padding_mask" : "f32 attn_mask, causal"));
    oa::ml::Generator g(6);
    auto mha = std::make_shared<MultiHeadAttention>(D, H, g, !bool_masks, 0.0, true, std::nullopt, KD, VD);
    EXPECT_EQ(mha->qkv(), nullptr);
    EXPECT_EQ(names_of(mha->named_parameters()),
              (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "proj.weight", "proj.bias"}));
    EXPECT_EQ(mha->named_parameters()[1].second.shape(), Shape({D, KD}));
    EXPECT_EQ(mha->parameter_count(), D * D + D * KD + D * VD + 3 * D + D * D + D);
    ref::Vec mask(static_cast<std::size_t>(B * H * Sq * Sk));
    for (std::size_t at = 0; at < mask.size(); ++at)
      mask[at] = bool_masks ? (padding[at / (H * Sq * Sk) * Sk + at % Sk] != 0 ? -inf : 0.0) : additive[at];
    MaskedAttention module(mha, Matrix::from_vector({B, Sk, KD}, key), Matrix::from_vector({B, Sk, VD}, value),
                           bool_masks ? Matrix::from_bool({B, Sk}, padding) : Matrix(),
                           bool_masks ? Matrix() : Matrix::from_vector({B * H, Sq, Sk}, additive));
    const Matrix y = oa::test::module_gradcheck(module, oa::test::random_input({B, Sq, D}, 34), [&](const Args& v) {
      return ref::multi_head_attention(v[0], kd, vd, B, Sq, Sk, D, KD, VD, H, !bool_masks, mask, v[1], v[2], v[3], v[4], v[5], v[6]);
    });
    EXPECT_EQ(y.shape(), Shape({B, Sq, D}));
  }
  oa::ml::Generator g(7);
  MultiHeadAttention mha(D, H, g, false, 0.0, false, std::nullopt, KD, VD);
  EXPECT_EQ(names_of(mha.named_parameters()), (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "proj.weight"}));
  const Matrix q = Matrix::from_vector({B, Sq, D}, oa::test::test_values(B * Sq * D, 35));
  const Matrix k = Matrix::from_vector({B, Sk, KD}, key), v = Matrix::from_vector({B, Sk, VD}, value);
  const auto w_k = oa::test::test_values(D * KD, 36);
  mha.set_parameter("k_proj_weight", oa::ml::Parameter("k_proj_weight", Matrix::from_vector({D, KD}, w_k)));
  std::vector<ref::Vec> p;
  for (const auto& [name, param] : mha.named_parameters()) {
    const auto values = param.value().to_vector();
    p.emplace_back(values.begin(), values.end());
  }
  EXPECT_EQ(p[1], ref::Vec(w_k.begin(), w_k.end()));
  const MultiHeadAttentionOutput r = mha.forward_with_weights(q, k, v);
  const auto qv = q.to_vector();
  EXPECT_TRUE(oa_test::near(
      r.output.to_vector(),
      ref::multi_head_attention({qv.begin(), qv.end()}, kd, vd, B, Sq, Sk, D, KD, VD, H, false, {}, p[0], p[1], p[2], {}, p[3], {}), 1e-5,
      1e-4));
  EXPECT_EQ(r.weights.shape(), Shape({B, H, Sq, Sk}));
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { mha(q); }, ErrorKind::InvalidArgument, {"MultiHeadAttention", "forward(x)", "kdim 6", "vdim 5"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(q, q, v); }, ErrorKind::InvalidArgument, {"MultiHeadAttention", "key [2, 3, 8]", "[B, S, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(q, k, k); }, ErrorKind::InvalidArgument, {"MultiHeadAttention", "value [2, 4, 6]", "[B, S, 5]"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        mha(q, k, Matrix::zeros({B, Sk + 1, VD}));
      },
      ErrorKind::InvalidArgument, {"MultiHeadAttention", "key [2, 4, 6] and value [2, 5, 5]", "one Sk"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        mha.set_parameter("v_proj_weight", oa::ml::Parameter("v", Matrix::zeros({D, KD})));
      },
      ErrorKind::InvalidArgument, {"v_proj_weight", "[8, 5]", "[8, 6]"}));
  EXPECT_TRUE(oa_test::throws([&] { MultiHeadAttention(D, H, g, false, 0.0, true, std::nullopt, 0, VD); }, ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "kdim 0"}));
}

// forward_with_weights: forward's output and, per head, probabilities whose
// rows sum to one, zero at the keys a query may not see (causal, bottom-right
// aligned: query i sees keys j <= i + 1; batch 0 pads key 3); bias = false
// leaves out both projections' biases (torch's bias=False).
TEST(NnAttention, ForwardWithWeightsAndNoBias) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(testing::Message() << "bias " << bias);
    oa::ml::Generator g(11);
    MultiHeadAttention mha(8, 2, g, true, 0.0, bias);
    EXPECT_EQ(mha.parameter_count(), bias ? 3 * 64 + 24 + 64 + 8 : 3 * 64 + 64);
    const Matrix q = Matrix::from_vector({2, 3, 8}, oa::test::test_values(48, 12));
    const Matrix kv = Matrix::from_vector({2, 4, 8}, oa::test::test_values(64, 13));
    const Matrix padding = Matrix::from_bool({2, 4}, std::vector<std::uint8_t>{0, 0, 0, 1, 0, 0, 0, 0});
    const MultiHeadAttentionOutput r = mha.forward_with_weights(q, kv, kv, padding);
    const std::vector<float> expected = mha(q, kv, kv, padding).to_vector();
    EXPECT_TRUE(oa_test::near(r.output.to_vector(), {expected.begin(), expected.end()}, 1e-6, 1e-5));
    ASSERT_EQ(r.weights.shape(), Shape({2, 2, 3, 4}));
    const std::vector<float> w = r.weights.to_vector();
    for (std::size_t row = 0; row < 2 * 2 * 3; ++row) {
      const std::size_t b = row / 6, i = row % 3;
      float sum = 0.0f;
      for (std::size_t j = 0; j < 4; ++j) {
        const float p = w[row * 4 + j];
        sum += p;
        if (j > i + 1 || (b == 0 && j == 3)) {
          EXPECT_EQ(p, 0.0f) << row << ", " << j;
        }
      }
      EXPECT_NEAR(sum, 1.0f, 1e-6) << row;
    }
  }
}

TEST(NnAttention, ForwardInputs) {
  oa::ml::Generator g(8);
  MultiHeadAttention mha(8, 2, g);
  const Matrix x = Matrix::from_vector({2, 3, 8}, oa::test::test_values(48, 9));
  // forward(x, x, x) is self-attention; forward_inputs takes either form.
  const std::vector<float> self = mha(x).to_vector();
  EXPECT_TRUE(oa_test::near(mha(x, x, x).to_vector(), {self.begin(), self.end()}, 1e-6, 1e-5));
  const std::array<Matrix, 1> one{x};
  EXPECT_EQ(mha.forward_inputs(one).to_vector(), self);
  EXPECT_TRUE(oa_test::throws([&] { mha(x, x); }, oa::ErrorKind::InvalidArgument, {"MultiHeadAttention", "2 inputs"}));
  // A one-input module refuses several.
  Linear linear(8, 8, g);
  EXPECT_TRUE(oa_test::throws([&] { linear(x, x); }, oa::ErrorKind::InvalidArgument, {"Linear", "one input", "2 were given"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(x, x, x, Matrix::from_bool({2, 5}, std::vector<bool>(10, false))); }, oa::ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "key_padding_mask", "[2, 5]"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(x, x, x, Matrix(), Matrix::zeros({3, 4})); }, oa::ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "attn_mask", "[3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(x, x, x, Matrix(), Matrix::from_i32({3, 3}, std::vector<std::int32_t>(9, 0))); },
                              oa::ErrorKind::InvalidArgument, {"MultiHeadAttention", "attn_mask", "bool", "f32", "i32 [3, 3]"}));
}

TEST(NnAttention, NoKeys) {
  // Sk = 0: every query attends to nothing, zeros before the output
  // projection (as SDPA), so each output row is the projection's bias and the
  // query's gradient is zero.
  oa::ml::Generator g(9);
  MultiHeadAttention mha(8, 2, g);
  const Matrix query = oa::set_requires_grad(Matrix::from_vector({2, 3, 8}, oa::test::test_values(48, 10)));
  const Matrix none = Matrix::zeros({2, 0, 8});
  const Matrix y = mha(query, none, none);
  ASSERT_EQ(y.shape(), (oa::Shape{2, 3, 8}));
  const auto out = y.to_vector();
  for (std::size_t i = 8; i < out.size(); ++i) EXPECT_EQ(out[i], out[i % 8]) << i;
  oa::backward(oa::matrix::sum_all(y));
  const auto dq = oa::grad(query).to_vector();
  EXPECT_TRUE(std::all_of(dq.begin(), dq.end(), [](float v) { return v == 0.0f; }));
}

TEST(NnAttention, Errors) {
  using oa::ErrorKind;
  oa::ml::Generator g(7);
  MultiHeadAttention mha(8, 2, g);
  EXPECT_TRUE(oa_test::throws([&] { mha(Matrix::zeros({6, 8})); }, ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "[6, 8]"}));
  EXPECT_TRUE(oa_test::throws([&] { mha(Matrix::zeros({2, 3, 4})); }, ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { MultiHeadAttention(8, 2, g, false, 1.0); }, ErrorKind::InvalidArgument,
                              {"MultiHeadAttention", "dropout 1"}));
}

}  // namespace
