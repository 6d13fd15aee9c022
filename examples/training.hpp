#pragma once
// The training loop the examples share: AdamW on the cross entropy of
// model(x) against the i32 class targets y.
#include <cstdio>

#include "oa/oa.hpp"

namespace examples {

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
