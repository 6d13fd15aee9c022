#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "oa/oa.hpp"
#include "reference/optim.hpp"
#include "support/expect.hpp"
#include "support/temp_dir.hpp"

namespace {

using oa::Matrix;
using oa::Shape;
using oa::ml::Parameter;
namespace optim = oa::ml::optim;

// Sets p's gradient to exactly `g`: the gradient of sum(p * g) through an
// identity affine map (alpha 1 multiplies exactly).
void set_grad(const Parameter& p, const std::vector<double>& g) {
  p.zero_grad();
  const std::vector<float> f(g.begin(), g.end());
  oa::backward(oa::matrix::affine(p.value(), 1.0f, 0.0f), Matrix::from_vector(p.shape(), f));
}

std::vector<double> values(std::size_t n, double scale, double shift) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(1.3 * static_cast<double>(i) + shift);
  return v;
}

Parameter make_param(const std::string& name, const Shape& shape, const std::vector<double>& init) {
  const std::vector<float> f(init.begin(), init.end());
  return Parameter(name, Matrix::from_vector(shape, f));
}


// f32 results against the f64 reference.
::testing::AssertionResult matches(const std::vector<float>& got, const std::vector<double>& want, double tol = 2e-6) {
  return oa_test::near(got, want, tol, tol);
}

TEST(NnOptim, SgdMatchesHandComputedUpdates) {
  const std::vector<optim::SgdOptions> configs = {
      {.lr = 0.1f},
      {.lr = 0.1f, .momentum = 0.9f},
      {.lr = 0.05f, .momentum = 0.8f, .dampening = 0.25f},
      {.lr = 0.1f, .momentum = 0.9f, .nesterov = true},
      {.lr = 0.1f, .momentum = 0.5f, .weight_decay = 0.01f, .nesterov = true},
      {.lr = 0.2f, .weight_decay = 0.1f},
  };
  const std::vector<double> lrs_scale = {1.0, 0.5, 0.25};  // the lr changes every step
  for (std::size_t k = 0; k < configs.size(); ++k) {
    SCOPED_TRACE(k);
    const auto& o = configs[k];
    std::vector<double> w = values(15, 1.0, 0.2), b = values(7, 0.5, 1.0);
    auto pw = make_param("fc.weight", {3, 5}, w);
    auto pb = make_param("fc.bias", {7}, b);
    optim::Sgd sgd({pw, pb}, o);
    oa::reference::SgdReference rw{o}, rb{o};
    for (int s = 0; s < 3; ++s) {
      const double lr = o.lr * lrs_scale[static_cast<std::size_t>(s)];
      sgd.set_lr(static_cast<float>(lr));
      const auto gw = values(15, 0.7, s * 2.1), gb = values(7, 1.1, s + 0.3);
      set_grad(pw, gw);
      set_grad(pb, gb);
      const auto vw = pw.version();
      sgd.step();
      EXPECT_GT(pw.version(), vw);
      rw.step(w, gw, static_cast<float>(lr));
      rb.step(b, gb, static_cast<float>(lr));
    }
    EXPECT_TRUE(matches(pw.value().to_vector(), w));
    EXPECT_TRUE(matches(pb.value().to_vector(), b));
    EXPECT_EQ(sgd.steps(), 3);
    EXPECT_EQ(sgd.state().size(), o.momentum != 0 ? 2u : 0u);
  }
}

TEST(NnOptim, AdamWMatchesHandComputedUpdatesAndSkipsMissingGradients) {
  const optim::AdamWOptions o{.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.1f};
  std::vector<double> w = values(33, 1.0, 0.4), b = values(5, 0.3, 2.0);
  auto pw = make_param("w", {3, 11}, w);
  auto pb = make_param("b", {5}, b);
  optim::AdamW adam({pw, pb}, o);
  oa::reference::AdamWReference rw{o}, rb{o};
  for (int s = 0; s < 3; ++s) {
    const auto gw = values(33, 0.9, 0.7 * s), gb = values(5, 2.0, 1.5 * s);
    set_grad(pw, gw);
    if (s == 1) pb.zero_grad();  // b has no gradient at step 2: skipped, its bias correction stays behind
    else set_grad(pb, gb);
    adam.step();
    rw.step(w, gw, o.lr);
    if (s != 1) rb.step(b, gb, o.lr);
  }
  EXPECT_TRUE(matches(pw.value().to_vector(), w));
  EXPECT_TRUE(matches(pb.value().to_vector(), b));
  const auto state = adam.state();
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state[0].first, "w.exp_avg");
  EXPECT_EQ(state[3].first, "b.exp_avg_sq");
  EXPECT_TRUE(matches(state[0].second.to_vector(), rw.m));
  EXPECT_TRUE(matches(state[1].second.to_vector(), rw.v));
  EXPECT_TRUE(matches(state[2].second.to_vector(), rb.m));
}

TEST(NnOptim, OneFusedDispatchPerParameterAndZeroGrad) {
  auto a = make_param("a", {2049}, values(2049, 1.0, 0.0));
  auto b = make_param("b", {3}, values(3, 1.0, 1.0));
  auto c = make_param("c", {4, 4}, values(16, 1.0, 2.0));
  optim::AdamW adam({a, b, c});
  set_grad(a, values(2049, 1.0, 0.5));
  set_grad(c, values(16, 1.0, 0.5));
  const auto engine = a.value().engine();
  const auto before = engine.stats();
  oa::TraceCapture trace(engine);
  adam.step();
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::ml::optim::adamw_step");
  EXPECT_EQ(ops[0].dispatches, 2u);  // a, c (b has no gradient)
  EXPECT_EQ(ops[0].inputs.size(), 4u);
  EXPECT_EQ(ops[0].outputs, (std::vector<Shape>{Shape{2049}, Shape{4, 4}}));
  EXPECT_EQ(engine.stats().submits, before.submits);  // no host round trip
  adam.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(c.grad().defined());
  optim::Sgd sgd({a, b, c}, {.lr = 0.1f, .momentum = 0.9f});
  set_grad(b, {1, 2, 3});
  oa::TraceCapture t2(engine);
  sgd.step();
  const auto ops2 = t2.ops();
  ASSERT_EQ(ops2.size(), 1u);
  EXPECT_EQ(ops2[0].name, "oa::ml::optim::sgd_step");
  EXPECT_EQ(ops2[0].dispatches, 1u);
  // With found_inf the counts live on the device: one more dispatch advances them.
  sgd.zero_grad();
  set_grad(a, values(2049, 1.0, 0.5));
  oa::TraceCapture t3(engine);
  adam.step(Matrix::zeros(Shape{}, engine));
  const auto ops3 = t3.ops();
  ASSERT_EQ(ops3.size(), 1u);
  EXPECT_EQ(ops3[0].dispatches, 2u);  // a, then the update counts
  EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{2, 0, 1}));
  adam.zero_grad();
  set_grad(c, values(16, 1.0, 0.5));
  adam.step();  // plain again: continues from the device's counts
  EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{2, 0, 2}));
}

TEST(NnOptim, RejectsBadOptionsAndParameters) {
  auto a = make_param("a", {2}, {1, 2});
  auto a2 = make_param("a", {3}, {1, 2, 3});
  auto expect_invalid = [](auto&& f, const char* part) { EXPECT_TRUE(oa_test::throws(f, oa::ErrorKind::InvalidArgument, {part})); };
  expect_invalid([&] { optim::Sgd({a}, {.nesterov = true}); }, "nesterov");
  expect_invalid([&] { optim::Sgd({a}, {.lr = -1.0f}); }, "lr");
  expect_invalid([&] { optim::Sgd({a, a2}); }, "two parameters are named 'a'");
  expect_invalid([&] { optim::Sgd({}); }, "no parameters");
  expect_invalid([&] { optim::AdamW({a}, {.beta2 = 1.0f}); }, "beta2");
  expect_invalid([&] { optim::AdamW({a}, {.eps = -1e-8f}); }, "eps");
  optim::AdamW adam({a});
  expect_invalid([&] { adam.set_lr(std::nanf("")); }, "lr");
}

TEST(NnOptim, ClipGradNormMatchesTheGlobalNormOnTheDevice) {
  // Eleven gradients (two first-level dispatches), one of 9 chunks plus one element (a deeper tree).
  const std::vector<std::int64_t> sizes = {1, 7, 300, 2048, 2049, 18433, 5, 64, 129, 3, 1000};
  std::vector<Matrix> grads;
  std::vector<std::vector<double>> host;
  double sum = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    host.push_back(values(static_cast<std::size_t>(sizes[k]), 0.05, static_cast<double>(k)));
    for (double x : host.back()) sum += x * x;
    grads.push_back(Matrix::from_vector({sizes[k]}, std::vector<float>(host.back().begin(), host.back().end())));
  }
  const double total = std::sqrt(sum);
  const float max_norm = static_cast<float>(total / 3.0);
  const auto engine = grads[0].engine();
  const auto before = engine.stats();
  oa::TraceCapture trace(engine);
  Matrix norm = optim::clip_grad_norm(grads, max_norm);
  const auto ops = trace.ops();
  EXPECT_EQ(engine.stats().submits, before.submits);  // nothing read back yet
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::ml::optim::clip_grad_norm");
  EXPECT_EQ(ops[0].inputs.size(), sizes.size());
  EXPECT_EQ(norm.shape(), Shape{});
  EXPECT_NEAR(norm.item(), total, 1e-5 * total);
  const double scale = max_norm / (total + 1e-6);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    std::vector<double> want = host[k];
    for (auto& x : want) x *= scale;
    EXPECT_TRUE(matches(grads[k].to_vector(), want, 1e-5));
  }
  // Below the threshold nothing changes; the same inputs give the same bits.
  const auto g = Matrix::from_vector({5}, std::vector<float>{3, 4, 0, 0, 0});
  const float n1 = optim::clip_grad_norm(std::vector<Matrix>{g}, 100.0f).item();
  EXPECT_FLOAT_EQ(n1, 5.0f);
  EXPECT_EQ(g.to_vector(), (std::vector<float>{3, 4, 0, 0, 0}));
  const float n2 = optim::clip_grad_norm(std::vector<Matrix>{g}, 100.0f).item();
  EXPECT_EQ(std::memcmp(&n1, &n2, 4), 0);
  // Through Parameters: those without a gradient are skipped.
  auto p = make_param("p", {2}, {1, 1});
  auto q = make_param("q", {2}, {1, 1});
  set_grad(p, {6, 8});
  EXPECT_FLOAT_EQ(optim::clip_grad_norm(std::vector<Parameter>{p, q}, 5.0f).item(), 10.0f);
  EXPECT_TRUE(matches(p.grad().to_vector(), {3.0 * 10 / (10 + 1e-6), 4.0 * 10 / (10 + 1e-6)}));
  EXPECT_EQ(optim::clip_grad_norm(std::vector<Parameter>{q}, 1.0f).item(), 0.0f);
  EXPECT_THROW(optim::clip_grad_norm(std::vector<Matrix>{g}, -1.0f), oa::Error);
}

TEST(NnOptim, Schedules) {
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(0, 1.0, 10, 110), 0.0);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(5, 1.0, 10, 110), 0.5);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(10, 1.0, 10, 110), 1.0);
  EXPECT_NEAR(optim::warmup_cosine_lr(60, 1.0, 10, 110), 0.5, 1e-12);
  EXPECT_NEAR(optim::warmup_cosine_lr(35, 2.0, 10, 110, 0.2), 0.2 + 1.8 * 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-12);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(110, 1.0, 10, 110, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(optim::warmup_cosine_lr(500, 1.0, 10, 110, 0.1), 0.1);
  EXPECT_NEAR(optim::warmup_cosine_lr(3, 1.0, 0, 4), 0.5 * (1 + std::cos(M_PI * 0.75)), 1e-12);
  EXPECT_THROW(optim::warmup_cosine_lr(0, 1.0, 10, 10), oa::Error);
  EXPECT_THROW(optim::warmup_cosine_lr(-1, 1.0, 1, 10), oa::Error);
  EXPECT_DOUBLE_EQ(optim::step_decay_lr(0, 0.1, 30), 0.1);
  EXPECT_DOUBLE_EQ(optim::step_decay_lr(29, 0.1, 30), 0.1);
  EXPECT_NEAR(optim::step_decay_lr(30, 0.1, 30), 0.01, 1e-15);
  EXPECT_NEAR(optim::step_decay_lr(95, 1.0, 30, 0.5), 0.125, 1e-15);
  EXPECT_THROW(optim::step_decay_lr(1, 0.1, 0), oa::Error);
}

TEST(NnOptim, StateRoundTripsThroughCheckpoints) {
  oa::test::TempDir dir;
  const optim::AdamWOptions o{.lr = 0.02f};
  auto w = make_param("layer.w", {4, 3}, values(12, 1.0, 0.1));
  auto b = make_param("layer.b", {3}, values(3, 1.0, 0.9));
  optim::AdamW adam({w, b}, o);
  for (int s = 0; s < 2; ++s) {
    set_grad(w, values(12, 1.0, s));
    if (s == 0) set_grad(b, values(3, 1.0, s));
    else b.zero_grad();
    adam.step();
  }
  adam.set_lr(0.015f);
  adam.save_state(dir / "opt.safetensors");
  const auto md = oa::ml::read_safetensors_metadata(dir / "opt.safetensors");
  EXPECT_EQ(md.at("optimizer"), "adamw");
  EXPECT_EQ(md.at("step"), "2");
  EXPECT_EQ(md.at("layer.w.step"), "2");
  EXPECT_EQ(md.at("layer.b.step"), "1");

  // A second optimizer over copies of the parameters continues bit-exactly.
  auto w2 = Parameter("layer.w", Matrix::from_vector({4, 3}, w.value().to_vector()));
  auto b2 = Parameter("layer.b", Matrix::from_vector({3}, b.value().to_vector()));
  optim::AdamW resumed({w2, b2}, o);
  resumed.load_state(dir / "opt.safetensors");
  EXPECT_EQ(resumed.steps(), 2);
  EXPECT_EQ(resumed.lr(), 0.015f);
  for (auto* opt : {static_cast<optim::Optimizer*>(&adam), static_cast<optim::Optimizer*>(&resumed)}) {
    const auto& ps = opt->parameters();
    set_grad(ps[0], values(12, 1.0, 7.0));
    set_grad(ps[1], values(3, 1.0, 7.0));
    opt->step();
  }
  EXPECT_EQ(w.value().to_vector(), w2.value().to_vector());
  EXPECT_EQ(b.value().to_vector(), b2.value().to_vector());

  // Another optimizer kind or other parameters are refused, naming the cause.
  optim::Sgd sgd({w2, b2}, {.momentum = 0.9f});
  EXPECT_TRUE(oa_test::throws([&] { sgd.load_state(dir / "opt.safetensors"); }, oa::ErrorKind::InvalidArgument,
                              {"load_state", "opt.safetensors", "'adamw', not 'sgd'"}));
  auto other = make_param("other", {3}, values(3, 1.0, 0.0));
  optim::AdamW wrong({w2, other});
  EXPECT_TRUE(oa_test::throws([&] { wrong.load_state(dir / "opt.safetensors"); }, oa::ErrorKind::InvalidArgument,
                              {"metadata 'other.step' is missing"}));
  sgd.save_state(dir / "sgd.safetensors");
  optim::Sgd sgd2({w2, b2}, {.momentum = 0.9f});
  sgd2.load_state(dir / "sgd.safetensors");
  EXPECT_EQ(sgd2.state().size(), 2u);
}

TEST(NnOptim, StateRoundTripsInMemory) {
  const optim::AdamWOptions o{.lr = 0.02f, .weight_decay = 0.1f};
  auto w = make_param("w", {4, 3}, values(12, 1.0, 0.1));
  auto b = make_param("b", {3}, values(3, 1.0, 0.9));
  optim::AdamW adam({w, b}, o);
  for (int s = 0; s < 3; ++s) {
    set_grad(w, values(12, 1.0, s));
    if (s == 1) set_grad(b, values(3, 1.0, s));
    else b.zero_grad();
    adam.step();
  }
  // Snapshots of the state (state() holds the live buffers).
  oa::ml::NamedMatrices saved;
  for (const auto& [name, m] : adam.state()) saved.emplace_back(name, Matrix::from_vector(m.shape(), m.to_vector()));
  EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{3, 1}));

  auto w2 = Parameter("w", Matrix::from_vector({4, 3}, w.value().to_vector()));
  auto b2 = Parameter("b", Matrix::from_vector({3}, b.value().to_vector()));
  optim::AdamW resumed({w2, b2}, o);
  resumed.load_state(saved, 0.015f, adam.steps(), adam.parameter_steps());
  adam.set_lr(0.015f);
  EXPECT_EQ(resumed.steps(), 3);
  EXPECT_EQ(resumed.lr(), 0.015f);
  EXPECT_EQ(resumed.parameter_steps(), adam.parameter_steps());
  for (int s = 0; s < 2; ++s)
    for (auto* opt : {static_cast<optim::Optimizer*>(&adam), static_cast<optim::Optimizer*>(&resumed)}) {
      const auto& ps = opt->parameters();
      set_grad(ps[0], values(12, 1.0, 7.0 + s));
      set_grad(ps[1], values(3, 1.0, 7.0 - s));
      opt->step();
    }
  EXPECT_EQ(w.value().to_vector(), w2.value().to_vector());
  EXPECT_EQ(b.value().to_vector(), b2.value().to_vector());

  // Faults are refused, naming them, before anything changes.
  const auto before = resumed.state()[0].second.to_vector();
  auto missing = saved;
  missing.pop_back();
  auto extra = saved;
  extra.emplace_back("c.exp_avg", Matrix::zeros({3}));
  auto wrong = saved;
  wrong[0].second = Matrix::zeros({3, 4});
  const std::vector<std::int64_t> counts{3, 1};
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(missing, 0.01f, 3, counts); }, oa::ErrorKind::InvalidArgument,
                              {"load_state", "'b.exp_avg_sq'", "missing"}));
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(extra, 0.01f, 3, counts); }, oa::ErrorKind::InvalidArgument,
                              {"'c.exp_avg'", "matches no state tensor"}));
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(wrong, 0.01f, 3, counts); }, oa::ErrorKind::InvalidArgument,
                              {"'w.exp_avg'", "[3, 4]", "[4, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(saved, -1.0f, 3, counts); }, oa::ErrorKind::InvalidArgument, {"lr = -1"}));
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(saved, 0.01f, 3, {3}); }, oa::ErrorKind::InvalidArgument,
                              {"1 parameter step counts for 2 parameters"}));
  EXPECT_TRUE(oa_test::throws([&] { resumed.load_state(saved, 0.01f, 2, counts); }, oa::ErrorKind::InvalidArgument,
                              {"'w' has 3 updates, outside [0, step = 2]"}));
  EXPECT_EQ(resumed.state()[0].second.to_vector(), before);
  EXPECT_EQ(resumed.lr(), 0.015f);
}

}  // namespace
