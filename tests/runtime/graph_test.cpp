// StepGraph: a training step captured once and replayed with new inputs gives
// bitwise the parameters of the same steps run eagerly, and records nothing on
// the host per replay.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
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

void train_step(Model& m, oa::ml::optim::Optimizer& opt) {
  oa::backward(m.loss());
  opt.step();
  opt.zero_grad();
}

std::vector<std::vector<float>> values(const Model& m) {
  std::vector<std::vector<float>> out;
  for (auto& p : m.params) out.push_back(p.value().to_vector());
  return out;
}

using OptimizerFactory = std::unique_ptr<oa::ml::optim::Optimizer> (*)(const std::vector<Parameter>&);

std::unique_ptr<oa::ml::optim::Optimizer> sgd(const std::vector<Parameter>& p) {
  return std::make_unique<oa::ml::optim::Sgd>(p, oa::ml::optim::SgdOptions{.lr = 0.05f, .momentum = 0.9f});
}

std::unique_ptr<oa::ml::optim::Optimizer> adamw(const std::vector<Parameter>& p) {
  return std::make_unique<oa::ml::optim::AdamW>(p, oa::ml::optim::AdamWOptions{.lr = 0.01f, .weight_decay = 0.1f});
}

std::unique_ptr<oa::ml::optim::Optimizer> adam_amsgrad(const std::vector<Parameter>& p) {
  return std::make_unique<oa::ml::optim::Adam>(p, oa::ml::optim::AdamOptions{.lr = 0.01f, .weight_decay = 0.1f, .amsgrad = true});
}

// A learning rate that changes every step, as schedules do.
float lr_at(int step) { return static_cast<float>(oa::ml::optim::warmup_cosine_lr(step, 0.02, 2, 8, 0.002)); }

// Steps 0..n-1 eager, or captured once and replayed n times; the learning
// rate is set before every step (or replay), the inputs written.
void check_replay_matches_eager(Factory make, OptimizerFactory optimizer, int n) {
  std::vector<std::vector<float>> eager, replayed;
  std::int64_t eager_steps = 0;
  {
    oa::Engine e;
    Model m = make(e);
    auto opt = optimizer(m.params);
    for (int i = 0; i < n; ++i) {
      feed(m, i);
      opt->set_lr(lr_at(i));
      train_step(m, *opt);
    }
    eager = values(m);
    eager_steps = opt->steps();
  }
  {
    oa::Engine e;
    Model m = make(e);
    auto opt = optimizer(m.params);
    const auto before = values(m);
    const auto dispatches_before = e.stats().dispatches;
    oa::StepGraph graph(e, [&] { train_step(m, *opt); });
    EXPECT_GT(graph.dispatches(), 0u);
    const auto captured = e.stats().dispatches;
    EXPECT_EQ(captured - dispatches_before, graph.dispatches());
    // The capture ran nothing and counted no step.
    EXPECT_EQ(values(m), before);
    EXPECT_EQ(opt->steps(), 0);
    for (int i = 0; i < n; ++i) {
      feed(m, i);
      opt->set_lr(lr_at(i));
      const auto submits = e.stats().submits;
      graph.replay(e);
      EXPECT_LE(e.stats().submits - submits, 2u);  // the input and constant copies (if any) and the replay
    }
    EXPECT_EQ(e.stats().dispatches, captured + 0u) << "a replay records no dispatch";
    replayed = values(m);
    EXPECT_EQ(opt->steps(), eager_steps);
  }
  ASSERT_EQ(eager.size(), replayed.size());
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(eager[i], replayed[i]) << "parameter " << i;
}

TEST(RuntimeGraph, MlpStepReplayedGivesTheEagerParametersBitwise) {
  check_replay_matches_eager(mlp, sgd, 6);
  check_replay_matches_eager(mlp, adamw, 6);
  check_replay_matches_eager(mlp, adam_amsgrad, 3);
}
TEST(RuntimeGraph, ConvStepReplayedGivesTheEagerParametersBitwise) {
  check_replay_matches_eager(conv, sgd, 4);
  check_replay_matches_eager(conv, adamw, 4);
}

// A training step through BatchNorm2d, whose running statistics and
// num_batches_tracked the op updates on the GPU, captured and replayed gives
// the eager steps' parameters, running statistics and count bitwise, for a
// fixed momentum and for momentum None (1 / the count).
TEST(RuntimeGraph, BatchNormStepReplayedGivesTheEagerStatisticsAndCount) {
  for (const std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    const auto run = [momentum](bool capture) {
      oa::Engine e;
      oa::ml::nn::BatchNorm2d bn(3, 1e-5, momentum, true, e);
      const Matrix x = Matrix::zeros({4, 3, 5, 5}, e), y = Matrix::zeros({4, 3, 5, 5}, e);
      oa::ml::optim::Sgd opt(bn.parameters(), {.lr = 0.05f});
      const auto step = [&] {
        oa::backward(oa::ml::mse_loss(bn.forward(x), y));
        opt.step();
        opt.zero_grad();
      };
      std::optional<oa::StepGraph> graph;
      if (capture) graph.emplace(e, step);
      for (int i = 0; i < 4; ++i) {
        x.write(host_data(static_cast<std::size_t>(x.numel()), 300 + i));
        y.write(host_data(static_cast<std::size_t>(y.numel()), 400 + i));
        if (graph) graph->replay(e);
        else step();
      }
      std::vector<std::vector<float>> out{bn.running_mean().to_vector(), bn.running_var().to_vector()};
      for (const auto& p : bn.parameters()) out.push_back(p.value().to_vector());
      return std::make_pair(out, bn.num_batches_tracked().to_i32());
    };
    const auto eager = run(false), replayed = run(true);
    EXPECT_EQ(eager.second, std::vector<std::int32_t>{4});
    EXPECT_EQ(replayed.second, eager.second) << "num_batches_tracked";
    EXPECT_EQ(replayed.first, eager.first) << "running statistics and parameters, momentum " << (momentum ? "0.1" : "None");
  }
}

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
  EXPECT_TRUE(oa_test::throws([&] { e.on_replay([] {}); }, oa::ErrorKind::FailedPrecondition, {"Engine::on_replay"}));
  oa::Engine other;
  EXPECT_TRUE(oa_test::throws([&] { graph.replay(other); }, oa::ErrorKind::InvalidArgument, {"StepGraph::replay", "another engine"}));
  graph.replay(e);
  EXPECT_EQ(loss.to_vector()[0], before);
  feed(m, 2);
  graph.replay(e);
  EXPECT_NE(loss.to_vector()[0], before);
}

// A deep chain of temporaries: a graph that kept each one apart would hold
// their sum; reuse within the step keeps it near the eager step's peak.
TEST(RuntimeGraph, CapturedStepReusesMemoryWithinTheStep) {
  oa::Engine e;
  std::vector<Parameter> params;
  for (int i = 0; i < 12; ++i) params.emplace_back(fmt::format("w{}", i), Matrix::uniform({64, 64}, -0.2f, 0.2f, 10 + i, e));
  Matrix x = Matrix::uniform({256, 64}, -1.0f, 1.0f, 9, e);
  oa::ml::optim::Sgd opt(params, {.lr = 0.01f});
  auto step = [&] {
    Matrix h = x;
    for (auto& p : params) h = oa::matrix::tanh(oa::matrix::matmul(h, p.value()));
    oa::backward(oa::matrix::mean_all(oa::matrix::square(h)));
    opt.step();
    opt.zero_grad();
  };
  step();  // gradients and other first-use allocations exist from here on
  e.synchronize();
  const auto base = e.memory_stats().in_use_bytes;
  e.reset_peak_memory();
  step();
  e.synchronize();
  const auto eager_peak = e.memory_stats().peak_in_use_bytes - base;
  oa::StepGraph graph(e, step);
  const auto held = e.memory_stats().in_use_bytes - base;
  EXPECT_GT(held, 0u);
  EXPECT_LE(held, eager_peak + eager_peak / 4) << "eager peak " << eager_peak;
  graph.replay(e);
  e.synchronize();
}

TEST(RuntimeGraph, MemoryOfTheStepIsHeldUntilTheGraphIsGone) {
  oa::Engine e;
  Model m = mlp(e);
  oa::ml::optim::Sgd opt(m.params, {.lr = 0.05f});
  feed(m, 0);
  (void)e.device_check_record();  // the engine's own, made before a first capture and kept
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

namespace {

// A device check captured in a step runs on every replay: indices written
// out of range before a replay raise OutOfRange at the next read; in range
// again, the replays read fine. The graph's checks go with it.
TEST(RuntimeGraph, DeviceChecksRunOnEveryReplay) {
  oa::Engine e;
  const Matrix w = Matrix::uniform({5, 3}, -1.0f, 1.0f, 6, e);
  const Matrix idx = Matrix::from_i32({4}, std::vector<std::int32_t>{0, 1, 2, 3}, e);
  Matrix rows;
  {
    oa::StepGraph graph(e, [&] { rows = oa::ml::embedding(idx, w); });
    graph.replay(e);
    const std::vector<float> good = rows.to_vector();
    idx.write_i32(std::vector<std::int32_t>{0, 5, 2, 3});
    graph.replay(e);
    EXPECT_TRUE(oa_test::throws([&] { e.synchronize(); }, oa::ErrorKind::OutOfRange, {"oa::ml::embedding", "index 5"}));
    idx.write_i32(std::vector<std::int32_t>{0, 1, 2, 3});
    graph.replay(e);
    EXPECT_EQ(rows.to_vector(), good);
  }
  EXPECT_NO_THROW(e.synchronize());
  // A failure before a later checked op of the same replay is kept; a graph
  // gone before its failed replay was read leaves the report to that read.
  Matrix picked;
  const Matrix first = Matrix::from_i32({1}, std::vector<std::int32_t>{0}, e);
  {
    oa::StepGraph graph(e, [&] {
      picked = oa::matrix::index_select(w, 0, idx);
      rows = oa::ml::embedding(first, w);
    });
    idx.write_i32(std::vector<std::int32_t>{0, 1, 9, 3});
    graph.replay(e);
  }
  EXPECT_TRUE(oa_test::throws([&] { e.synchronize(); }, oa::ErrorKind::OutOfRange, {"oa::matrix::index_select", "index 9"}));
  EXPECT_NO_THROW(e.synchronize());
}

}  // namespace
