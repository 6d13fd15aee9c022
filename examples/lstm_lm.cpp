// A tiny LSTM language model in oa's public API: Embedding -> 2-layer LSTM ->
// Linear over the next token of a synthetic sequence (token t + 1 follows
// 5 t + 3 mod 16 from a random start), trained a few AdamW steps with the
// cross entropy. Prints the loss per step; exits non-zero unless the last
// loss is below half the first (a few seconds on lavapipe).
#include <cstdint>
#include <memory>
#include <string>

#include "oa/ml/nn/nn.hpp"
#include "oa/ml/nn/rnn.hpp"
#include "oa/oa.hpp"
#include "training.hpp"

namespace {

using oa::Matrix;
namespace nn = oa::ml::nn;

constexpr std::int64_t kVocab = 16, kEmbed = 16, kHidden = 32, kSteps = 16, kBatch = 8;

// tokens i32 [T, B] -> logits [T * B, vocab] of the next token.
class LanguageModel : public nn::Module {
 public:
  explicit LanguageModel(oa::ml::Generator& gen)
      : embed_(register_module("embed", std::make_shared<nn::Embedding>(kVocab, kEmbed, gen))),
        lstm_(register_module("lstm", std::make_shared<nn::LSTM>(kEmbed, kHidden, gen, nn::RNNOptions{.num_layers = 2}))),
        head_(register_module("head", std::make_shared<nn::Linear>(kHidden, kVocab, gen))) {}
  Matrix forward(const Matrix& tokens) override {
    const Matrix h = lstm_->forward(embed_->forward(tokens));  // [T, B, H]
    return head_->forward(h.reshape({-1, kHidden}));
  }
  std::string type_name() const override { return "LanguageModel"; }

 private:
  std::shared_ptr<nn::Embedding> embed_;
  std::shared_ptr<nn::LSTM> lstm_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

int main() {
  oa::ml::Generator gen(2024);
  LanguageModel model(gen);

  const examples::NextTokenTask task = examples::next_token_task(kVocab, kBatch, kSteps, true);
  return examples::train_until_loss_halves("lstm_lm", model, task.inputs, task.targets, 25, 2e-2f);
}
