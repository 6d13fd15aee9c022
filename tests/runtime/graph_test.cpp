// StepGraph: a training step captured once and replayed with new inputs gives
// bitwise the parameters of the same steps run eagerly, and records nothing on
// the host per replay.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace {

using oa::Matrix;
using oa::ml::Parameter;

std::vector<float> host_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// A model with its input and target storages; loss() computes the loss from
// whatever the inputs hold.
struct Model {
  std::vector<Parameter> params;
  Matrix x, y;
  std::function<Matrix()> loss;
};

Model mlp(const oa::Engine& e) {
  Model m;
  m.params = {Parameter("w1", Matrix::uniform({12, 32}, -0.3f, 0.3f, 1, e)), Parameter("b1", Matrix::uniform({32}, -0.1f, 0.1f, 2, e)),
              Parameter("w2", Matrix::uniform({32, 4}, -0.3f, 0.3f, 3, e))};
  m.x = Matrix::zeros({16, 12}, e);
  m.y = Matrix::zeros({16, 4}, e);
  m.loss = [&m] {
    auto h = oa::matrix::gelu(oa::matrix::add(oa::matrix::matmul(m.x, m.params[0].value()), m.params[1].value()));
    return oa::ml::mse_loss(oa::matrix::matmul(h, m.params[2].value()), m.y);
  };
  return m;
}

Model conv(const oa::Engine& e) {
  Model m;
  m.params = {Parameter("weight", Matrix::uniform({6, 2, 3, 3}, -0.3f, 0.3f, 4, e)),
              Parameter("bias", Matrix::uniform({6}, -0.1f, 0.1f, 5, e))};
  m.x = Matrix::zeros({2, 2, 10, 10}, e);
  m.y = Matrix::zeros({2, 6, 10, 10}, e);
  m.loss = [&m] {
    return oa::ml::mse_loss(oa::matrix::relu(oa::ml::conv_2d(m.x, m.params[0].value(), m.params[1].value(), 1, 1)), m.y);
  };
  return m;
}

using Factory = Model (*)(const oa::Engine&);

void feed(Model& m, int step) {
  m.x.write(host_data(static_cast<std::size_t>(m.x.numel()), 100 + step));
  m.y.write(host_data(static_cast<std::size_t>(m.y.numel()), 200 + step));
}

void train_step(Model& m, oa::ml::optim::Sgd& opt) {
  oa::backward(m.loss());
  opt.step();
  opt.zero_grad();
}

std::vector<std::vector<float>> values(const Model& m) {
  std::vector<std::vector<float>> out;
  for (auto& p : m.params) out.push_back(p.value().to_vector());
  return out;
}

// Step 0 eager in both runs (SGD momentum starts its buffers there), then
// steps 1..n eager, or captured once and replayed n times.
void check_replay_matches_eager(Factory make, int n) {
  std::vector<std::vector<float>> eager, replayed;
  {
    oa::Engine e;
    Model m = make(e);
    oa::ml::optim::Sgd opt(m.params, {.lr = 0.05f, .momentum = 0.9f});
    for (int i = 0; i <= n; ++i) {
      feed(m, i);
      train_step(m, opt);
    }
    eager = values(m);
  }
  {
    oa::Engine e;
    Model m = make(e);
    oa::ml::optim::Sgd opt(m.params, {.lr = 0.05f, .momentum = 0.9f});
    feed(m, 0);
    train_step(m, opt);
    const auto dispatches_before = e.stats().dispatches;
    oa::StepGraph graph(e, [&] { train_step(m, opt); });
    EXPECT_GT(graph.dispatches(), 0u);
    const auto captured = e.stats().dispatches;
    EXPECT_EQ(captured - dispatches_before, graph.dispatches());
    // The capture ran nothing: the parameters are still those after step 0.
    const auto after_step0 = values(m);
    for (int i = 1; i <= n; ++i) {
      feed(m, i);
      const auto submits = e.stats().submits;
      graph.replay(e);
      EXPECT_LE(e.stats().submits - submits, 2u);  // the input copies (if any) and the replay
    }
    EXPECT_EQ(e.stats().dispatches, captured + 0u) << "a replay records no dispatch";
    replayed = values(m);
    EXPECT_NE(replayed, after_step0);
  }
  ASSERT_EQ(eager.size(), replayed.size());
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(eager[i], replayed[i]) << "parameter " << i;
}

TEST(RuntimeGraph, MlpStepReplayedGivesTheEagerParametersBitwise) { check_replay_matches_eager(mlp, 5); }
TEST(RuntimeGraph, ConvStepReplayedGivesTheEagerParametersBitwise) { check_replay_matches_eager(conv, 4); }

TEST(RuntimeGraph, HostReadsDuringCaptureAndReplayOnAnotherEngineAreRefused) {
  oa::Engine e;
  Model m = mlp(e);
  feed(m, 0);
  EXPECT_TRUE(oa_test::throws([&] { oa::StepGraph g(e, [&] { (void)m.loss().to_vector(); }); }, oa::ErrorKind::FailedPrecondition,
                              {"Engine::read", "StepGraph"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::StepGraph g(e, [&] { feed(m, 1); }); }, oa::ErrorKind::FailedPrecondition,
                              {"Engine::write", "StepGraph"}));
  EXPECT_TRUE(oa_test::throws([&] { oa::StepGraph g(e, [&] { e.synchronize(); }); }, oa::ErrorKind::FailedPrecondition,
                              {"Engine::synchronize", "StepGraph"}));
  // The failed captures left the engine as it was: eager work and a capture go on.
  const float before = m.loss().to_vector()[0];
  Matrix loss;
  oa::StepGraph graph(e, [&] { loss = m.loss(); });
  EXPECT_TRUE(oa_test::throws([&] { oa::StepGraph nested(e, [&] { oa::StepGraph inner(e, [] {}); }); },
                              oa::ErrorKind::FailedPrecondition, {"already capturing"}));
  oa::Engine other;
  EXPECT_TRUE(oa_test::throws([&] { graph.replay(other); }, oa::ErrorKind::InvalidArgument, {"StepGraph::replay", "another engine"}));
  graph.replay(e);
  EXPECT_EQ(loss.to_vector()[0], before);
  feed(m, 2);
  graph.replay(e);
  EXPECT_NE(loss.to_vector()[0], before);
}

TEST(RuntimeGraph, MemoryOfTheStepIsHeldUntilTheGraphIsGone) {
  oa::Engine e;
  Model m = mlp(e);
  oa::ml::optim::Sgd opt(m.params, {.lr = 0.05f});
  feed(m, 0);
  e.synchronize();
  const auto in_use = e.memory_stats().in_use_bytes;
  {
    oa::StepGraph graph(e, [&] { train_step(m, opt); });
    // The step's temporaries are released, yet their memory stays with the graph.
    EXPECT_GT(e.memory_stats().in_use_bytes, in_use);
    for (int i = 0; i < 3; ++i) graph.replay(e);
  }
  e.synchronize();
  EXPECT_EQ(e.memory_stats().in_use_bytes, in_use);
}

}  // namespace
