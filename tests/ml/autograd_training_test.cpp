// A training-like loop: forward, backward, in-place update, with flat memory.
#include <gtest/gtest.h>

#include "oa/oa.hpp"

namespace {

using oa::Matrix;
using oa::ml::Parameter;

TEST(AutogradTraining, HundredIterationsWithFlatMemory) {
  // A two-layer perceptron fit to a fixed random target by plain SGD:
  // out = matmul_nt(gelu(x w1 + b1), w2), loss = mean((out - target)^2).
  auto engine = oa::Engine::default_engine();
  Parameter w1("w1", Matrix::uniform({8, 12}, -0.4f, 0.4f, 1));
  Parameter b1("b1", Matrix::zeros({12}));
  Parameter w2("w2", Matrix::uniform({4, 12}, -0.4f, 0.4f, 2));
  const auto x = Matrix::uniform({16, 8}, -1, 1, 3);
  const auto target = Matrix::uniform({16, 4}, -0.5f, 0.5f, 4);
  const float lr = 0.2f;

  auto step = [&] {
    auto h = oa::matrix::gelu(oa::matrix::matmul(x, w1.value()) + b1.value());
    auto out = oa::matrix::matmul_nt(h, w2.value());
    auto loss = oa::matrix::mean_all(oa::matrix::square(out - target));
    oa::backward(loss);
    {
      oa::NoGradGuard no_grad;
      for (const Parameter* p : {&w1, &b1, &w2}) p->assign(p->value() - p->grad() * lr);
    }
    for (const Parameter* p : {&w1, &b1, &w2}) p->zero_grad();
    return loss;
  };

  const float first = step().item();
  for (int i = 1; i < 10; ++i) step();
  engine.synchronize();
  const auto warm = engine.memory_stats();
  for (int i = 10; i < 99; ++i) step();
  const float last = step().item();
  engine.synchronize();
  const auto after = engine.memory_stats();
  EXPECT_LE(after.in_use_bytes, warm.in_use_bytes);
  EXPECT_LE(after.reserved_bytes, warm.reserved_bytes);
  EXPECT_LE(after.live_storages, warm.live_storages);
  EXPECT_LT(last, 0.5f * first);
  EXPECT_EQ(w1.version(), 100u);  // one bump per update
}

}  // namespace
