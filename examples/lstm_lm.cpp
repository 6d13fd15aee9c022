// A tiny LSTM language model in oa's public API: Embedding -> 2-layer LSTM ->
// Linear over the next token of a synthetic sequence (token t + 1 follows
// 5 t + 3 mod 16 from a random start), trained a few AdamW steps with the
// cross entropy. Prints the loss per step; exits non-zero unless the last
// loss is below half the first (a few seconds on lavapipe).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  // Sequences [T + 1, B] laid out time-major: inputs are steps 0..T-1, targets 1..T.
  std::vector<std::int32_t> inputs, targets;
  for (std::int64_t t = 0; t <= kSteps; ++t)
    for (std::int64_t b = 0; b < kBatch; ++b) {
      std::int32_t v = static_cast<std::int32_t>(b * 7 % kVocab);
      for (std::int64_t k = 0; k < t; ++k) v = (5 * v + 3) % kVocab;
      if (t < kSteps) inputs.push_back(v);
      if (t > 0) targets.push_back(v);
    }
  const Matrix x = Matrix::from_i32({kSteps, kBatch}, inputs), y = Matrix::from_i32({kSteps * kBatch}, targets);

  return examples::train_until_loss_halves("lstm_lm", model, x, y, 25, 2e-2f);
}
