// A training-like loop: forward, backward, in-place update, with flat memory.
#include <gtest/gtest.h>

#include "oa/oa.hpp"

namespace {

using oa::Matrix;
using oa::ml::Parameter;

TEST(AutogradTraining, HundredIterationsWithFlatMemory) {
  auto engine = oa::Engine::default_engine();
  const oa::Shape shape{8, 5};
  Parameter w("w", Matrix::uniform(shape, -0.5f, 0.5f, 1));
  Parameter b("b", Matrix::zeros(shape));
  auto x = Matrix::uniform(shape, -1, 1, 2);
  auto target = oa::matrix::tanh(Matrix::uniform(shape, -1, 1, 3) * x + 0.1f);
  const float lr = 0.5f;

  auto step = [&] {
    auto pred = oa::matrix::tanh(w.value() * x + b.value());
    auto err = pred - target;
    // loss = sum(err^2): its gradient with respect to err^2 is all ones.
    auto sq = oa::matrix::square(err);
    oa::backward(sq, Matrix::ones(shape));
    {
      oa::NoGradGuard no_grad;
      w.assign(w.value() - w.grad() * lr);
      b.assign(b.value() - b.grad() * lr);
    }
    w.zero_grad();
    b.zero_grad();
    return sq;
  };
  auto total = [](const Matrix& sq) {
    double s = 0;
    for (float v : sq.to_vector()) s += v;
    return s;
  };

  const double first = total(step());
  for (int i = 1; i < 10; ++i) step();
  engine.synchronize();
  const auto warm = engine.memory_stats();
  for (int i = 10; i < 99; ++i) step();
  const double last = total(step());
  engine.synchronize();
  const auto after = engine.memory_stats();
  EXPECT_LE(after.in_use_bytes, warm.in_use_bytes);
  EXPECT_LE(after.reserved_bytes, warm.reserved_bytes);
  EXPECT_LE(after.live_storages, warm.live_storages);
  EXPECT_LT(last, 0.2 * first);
  EXPECT_EQ(w.version(), 100u);  // one bump per update
}

}  // namespace
