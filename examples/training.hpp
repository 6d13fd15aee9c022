#pragma once
// What the examples share: the training loop (AdamW on the cross entropy of
// model(x) against the i32 class targets y) and the language models' task.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "oa/oa.hpp"

namespace examples {

// The next-token task of the language-model examples: sequence b starts at
// token 7 b mod vocab and token v is followed by 5 v + 3 mod vocab. inputs
// are the first `steps` tokens of `batch` sequences, i32 [steps, batch] when
// time_major, else [batch, steps]; targets the tokens that follow them, in
// the same order, flattened: i32 [steps * batch].
struct NextTokenTask {
  oa::Matrix inputs, targets;
};
inline NextTokenTask next_token_task(std::int64_t vocab, std::int64_t batch, std::int64_t steps, bool time_major) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch * (steps + 1)));  // [batch, steps + 1]
  for (std::int64_t b = 0; b < batch; ++b) {
    auto v = static_cast<std::int32_t>(b * 7 % vocab);
    for (std::int64_t t = 0; t <= steps; ++t, v = static_cast<std::int32_t>((5 * v + 3) % vocab))
      tokens[static_cast<std::size_t>(b * (steps + 1) + t)] = v;
  }
  std::vector<std::int32_t> inputs, targets;
  const std::int64_t outer = time_major ? steps : batch, inner = time_major ? batch : steps;
  for (std::int64_t i = 0; i < outer; ++i)
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t b = time_major ? j : i, t = time_major ? i : j;
      inputs.push_back(tokens[static_cast<std::size_t>(b * (steps + 1) + t)]);
      targets.push_back(tokens[static_cast<std::size_t>(b * (steps + 1) + t + 1)]);
    }
  return {oa::Matrix::from_i32({outer, inner}, inputs), oa::Matrix::from_i32({steps * batch}, targets)};
}

// Runs `steps` AdamW steps (learning rate lr, no weight decay) on
// cross_entropy(model(x), y), printing each step's loss. Returns 0 when the
// last loss is below half the first; otherwise prints why, naming `example`,
// and returns 1 (the exit status of the example).
inline int train_until_loss_halves(const char* example, oa::ml::nn::Module& model, const oa::Matrix& x, const oa::Matrix& y, int steps,
                                   float lr) {
  oa::ml::optim::AdamW opt(model.parameters(), {.lr = lr, .weight_decay = 0});
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    const oa::Matrix loss = oa::ml::cross_entropy(model(x), y);
    oa::backward(loss);
    opt.step();
    last = loss.item();
    if (step == 0) first = last;
    std::printf("step %2d  loss %.4f\n", step, static_cast<double>(last));
  }
  if (last < 0.5f * first) return 0;
  std::fprintf(stderr, "%s: the loss did not halve (first %.4f, last %.4f)\n", example, static_cast<double>(first),
               static_cast<double>(last));
  return 1;
}

}  // namespace examples
