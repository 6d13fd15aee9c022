// A tiny GPT-style language model in oa's public API: Embedding -> one
// pre-norm block (RMSNorm, rotary embeddings on causal attention over
// [B, H, S, Dh] heads from a permute, RMSNorm, a SiLU-gated MLP as Llama's)
// -> RMSNorm -> Linear over the next token of a synthetic sequence (token
// t + 1 follows 5 t + 3 mod 16 from a random start), trained a few AdamW steps
// with the cross entropy. Prints the loss per step; exits non-zero unless the
// last loss is below half the first (a few seconds on lavapipe).
#include <cstdint>
#include <memory>
#include <string>

#include "oa/oa.hpp"
#include "training.hpp"

namespace {

using oa::Matrix;
namespace nn = oa::ml::nn;

constexpr std::int64_t kVocab = 16, kDim = 32, kHeads = 2, kHeadDim = kDim / kHeads, kHidden = 64, kSeq = 16, kBatch = 4;

// x [B, S, D] -> x + attn(norm(x)), then + mlp(norm(.)).
class Block : public nn::Module {
 public:
  explicit Block(oa::ml::Generator& gen)
      : attn_norm_(register_module("attn_norm", std::make_shared<nn::RMSNorm>(kDim))),
        q_(register_module("q", std::make_shared<nn::Linear>(kDim, kDim, gen, false))),
        k_(register_module("k", std::make_shared<nn::Linear>(kDim, kDim, gen, false))),
        v_(register_module("v", std::make_shared<nn::Linear>(kDim, kDim, gen, false))),
        o_(register_module("o", std::make_shared<nn::Linear>(kDim, kDim, gen, false))),
        mlp_norm_(register_module("mlp_norm", std::make_shared<nn::RMSNorm>(kDim))),
        gate_(register_module("gate", std::make_shared<nn::Linear>(kDim, kHidden, gen, false))),
        up_(register_module("up", std::make_shared<nn::Linear>(kDim, kHidden, gen, false))),
        down_(register_module("down", std::make_shared<nn::Linear>(kHidden, kDim, gen, false))) {}

  Matrix forward(const Matrix& x) override {
    const std::int64_t batch = x.dim(0), seq = x.dim(1);
    const Matrix h = attn_norm_->forward(x);
    // [B, S, D] -> [B, S, H, Dh] -> [B, H, S, Dh]
    const auto heads = [&](nn::Linear& proj) { return oa::matrix::permute(proj(h).reshape({batch, seq, kHeads, kHeadDim}), {0, 2, 1, 3}); };
    const Matrix q = oa::ml::rope(heads(*q_)), k = oa::ml::rope(heads(*k_));
    const Matrix a = oa::ml::scaled_dot_product_attention(q, k, heads(*v_), Matrix(), std::nullopt, true);
    const Matrix x1 = x + o_->forward(oa::matrix::permute(a, {0, 2, 1, 3}).reshape({batch, seq, kDim}));
    const Matrix m = mlp_norm_->forward(x1);
    return x1 + down_->forward(oa::matrix::silu(gate_->forward(m)) * up_->forward(m));
  }
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<nn::RMSNorm> attn_norm_;
  std::shared_ptr<nn::Linear> q_, k_, v_, o_;
  std::shared_ptr<nn::RMSNorm> mlp_norm_;
  std::shared_ptr<nn::Linear> gate_, up_, down_;
};

// tokens i32 [B, S] -> logits [B * S, vocab] of the next token.
class LanguageModel : public nn::Module {
 public:
  explicit LanguageModel(oa::ml::Generator& gen)
      : embed_(register_module("embed", std::make_shared<nn::Embedding>(kVocab, kDim, gen))),
        block_(register_module("block", std::make_shared<Block>(gen))),
        norm_(register_module("norm", std::make_shared<nn::RMSNorm>(kDim))),
        head_(register_module("head", std::make_shared<nn::Linear>(kDim, kVocab, gen, false))) {}
  Matrix forward(const Matrix& tokens) override {
    return head_->forward(norm_->forward(block_->forward(embed_->forward(tokens))).reshape({-1, kDim}));
  }
  std::string type_name() const override { return "LanguageModel"; }

 private:
  std::shared_ptr<nn::Embedding> embed_;
  std::shared_ptr<Block> block_;
  std::shared_ptr<nn::RMSNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

int main() {
  oa::ml::Generator gen(2024);
  LanguageModel model(gen);

  const examples::NextTokenTask task = examples::next_token_task(kVocab, kBatch, kSeq, false);
  return examples::train_until_loss_halves("gpt_block", model, task.inputs, task.targets, 25, 1e-2f);
}
