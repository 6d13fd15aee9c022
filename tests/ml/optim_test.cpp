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

TEST(NnOptim, AdamAddsTheL2TermInsideTheStepAndKeepsTheRunningMaximum) {
  const optim::AdamOptions o{.lr = 0.05f, .beta1 = 0.8f, .beta2 = 0.9f, .eps = 1e-6f, .weight_decay = 0.2f, .amsgrad = true};
  std::vector<double> w = values(21, 1.0, 0.4), w_plain = w;
  auto pw = make_param("w", {3, 7}, w);
  optim::Adam adam({pw}, o);
  oa::reference::AdamReference r{o}, r_plain{{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay}};
  oa::TraceCapture trace(pw.value().engine());
  for (int s = 0; s < 4; ++s) {
    const auto g = values(21, 1.0 / (1 + 2 * s), 0.9 * s);  // shrinking: v falls below its maximum
    set_grad(pw, g);
    adam.step();
    EXPECT_EQ(pw.grad().to_vector(), std::vector<float>(g.begin(), g.end()));  // the L2 term stays out of the gradient
    r.step(w, g, o.lr);
    r_plain.step(w_plain, g, o.lr);
  }
  EXPECT_TRUE(matches(pw.value().to_vector(), w));
  EXPECT_FALSE(matches(pw.value().to_vector(), w_plain, 1e-4));  // the maximum made a difference
  const auto state = adam.state();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[2].first, "w.max_exp_avg_sq");
  EXPECT_TRUE(matches(state[1].second.to_vector(), r.v));
  EXPECT_TRUE(matches(state[2].second.to_vector(), r.vmax));
  std::size_t steps = 0;
  for (const auto& op : trace.ops()) steps += op.name == "oa::ml::optim::adamw_step" && op.dispatches == 1;
  EXPECT_EQ(steps, 4u);
}

TEST(NnOptim, OneFusedOpPerStepAndZeroGrad) {
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
  EXPECT_EQ(ops[0].dispatches, 1u);  // a and c in one dispatch (b has no gradient)
  EXPECT_EQ(ops[0].inputs.size(), 4u);
  EXPECT_EQ(ops[0].outputs, (std::vector<Shape>{Shape{2049}, Shape{4, 4}}));
  EXPECT_EQ(engine.stats().host_waits, before.host_waits);  // no host round trip
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

// ── Multi-tensor steps ───────────────────────────────────────────────────────
// A step updates up to 8 element ranges of parameters per dispatch (Adam 7,
// with amsgrad 5). Each
// parameter must get exactly what a step over it alone gives (the one-item
// dispatch of the same kernel), and what the f64 reference gives.

// Sizes around the 1024 elements of an update workgroup.
const std::vector<std::int64_t> kMixedSizes = {1, 255, 1024, 1025, 3000, 7, 2048, 1, 513, 4097, 9, 100, 256};

// One step of the schedule: the learning rate (times the options' lr), the
// found_inf passed (-1: none, the step pushes its values; 0 or 1: read from
// GradScaler's flag, 1 skipping the step) and a parameter without gradient (-1: none).
struct ScheduledStep {
  double lr_scale;
  int found_inf;
  int no_grad;
};
// Missing gradients make the update counts differ, so pushed steps split into
// dispatches of equal counts.
const std::vector<ScheduledStep> kSchedule = {{1.0, -1, -1}, {0.5, 0, 3}, {0.5, 1, -1}, {0.25, -1, 5}, {1.0, -1, -1}, {0.5, 0, 12}};

std::vector<double> gradient_at(std::size_t i, std::size_t s, std::int64_t n) {
  return values(static_cast<std::size_t>(n), 0.9, 1.7 * static_cast<double>(s) + static_cast<double>(i));
}

// The parameters and then the optimizer state after the schedule, with one
// optimizer over all parameters (`together`) or one per parameter.
template <class Opt, class Options>
std::vector<std::vector<float>> run_schedule(const Options& o, bool together) {
  std::vector<Parameter> ps;
  for (std::size_t i = 0; i < kMixedSizes.size(); ++i)
    ps.push_back(make_param(fmt::format("p{}", i), {kMixedSizes[i]}, values(static_cast<std::size_t>(kMixedSizes[i]), 1.0, 0.3 * i)));
  std::vector<std::unique_ptr<Opt>> opts;
  if (together) opts.push_back(std::make_unique<Opt>(ps, o));
  else
    for (const auto& p : ps) opts.push_back(std::make_unique<Opt>(std::vector<Parameter>{p}, o));
  for (std::size_t s = 0; s < kSchedule.size(); ++s) {
    const ScheduledStep& step = kSchedule[s];
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (static_cast<int>(i) == step.no_grad) ps[i].zero_grad();
      else set_grad(ps[i], gradient_at(i, s, kMixedSizes[i]));
    }
    for (auto& opt : opts) {
      opt->set_lr(static_cast<float>(o.lr * step.lr_scale));
      if (step.found_inf < 0) opt->step();
      else opt->step(Matrix::from_vector(Shape{}, std::vector<float>{static_cast<float>(step.found_inf)}));
    }
  }
  std::vector<std::vector<float>> out;
  for (const auto& p : ps) out.push_back(p.value().to_vector());
  for (auto& opt : opts)
    for (const auto& [name, m] : opt->state()) out.push_back(m.to_vector());
  return out;
}

// The parameters after the schedule by the f64 reference `R`.
template <class R, class Options>
std::vector<std::vector<double>> reference_schedule(const Options& o) {
  std::vector<std::vector<double>> ps;
  std::vector<R> refs;
  for (std::size_t i = 0; i < kMixedSizes.size(); ++i) {
    ps.push_back(values(static_cast<std::size_t>(kMixedSizes[i]), 1.0, 0.3 * i));
    refs.push_back(R{o});
  }
  for (std::size_t s = 0; s < kSchedule.size(); ++s) {
    if (kSchedule[s].found_inf == 1) continue;
    const float lr = static_cast<float>(o.lr * kSchedule[s].lr_scale);
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (static_cast<int>(i) != kSchedule[s].no_grad) refs[i].step(ps[i], gradient_at(i, s, kMixedSizes[i]), lr);
  }
  return ps;
}

template <class Opt, class R, class Options>
void expect_multi_tensor_step(const Options& o) {
  const auto together = run_schedule<Opt>(o, true), alone = run_schedule<Opt>(o, false);
  ASSERT_EQ(together.size(), alone.size());
  // The state of one optimizer lists per parameter what the optimizers of one
  // parameter each list; both list the parameters first.
  for (std::size_t i = 0; i < together.size(); ++i) EXPECT_EQ(together[i], alone[i]) << "value " << i;
  const auto want = reference_schedule<R>(o);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(matches(together[i], want[i], 1e-5)) << "parameter " << i;
}

TEST(NnOptim, MultiTensorSgdGivesEachParameterItsOwnStep) {
  const std::vector<optim::SgdOptions> configs = {
      {.lr = 0.1f},
      {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.1f},
      {.lr = 0.1f, .momentum = 0.5f, .weight_decay = 0.01f, .nesterov = true},
      {.lr = 0.2f, .weight_decay = 0.1f},
  };
  for (std::size_t k = 0; k < configs.size(); ++k) {
    SCOPED_TRACE(k);
    expect_multi_tensor_step<optim::Sgd, oa::reference::SgdReference>(configs[k]);
  }
}

TEST(NnOptim, MultiTensorAdamWGivesEachParameterItsOwnStep) {
  expect_multi_tensor_step<optim::AdamW, oa::reference::AdamWReference>(optim::AdamWOptions{.lr = 0.01f, .weight_decay = 0.1f});
  expect_multi_tensor_step<optim::AdamW, oa::reference::AdamWReference>(
      optim::AdamWOptions{.lr = 0.02f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.0f});
}

TEST(NnOptim, MultiTensorAdamAndAmsgradGiveEachParameterItsOwnStep) {
  // The schedule's gradients change every step, so v falls below its running maximum in places.
  expect_multi_tensor_step<optim::Adam, oa::reference::AdamReference>(optim::AdamOptions{.lr = 0.01f, .weight_decay = 0.1f});
  expect_multi_tensor_step<optim::Adam, oa::reference::AdamReference>(
      optim::AdamOptions{.lr = 0.02f, .beta1 = 0.8f, .beta2 = 0.9f, .eps = 1e-6f, .weight_decay = 0.05f, .amsgrad = true});
  expect_multi_tensor_step<optim::AdamW, oa::reference::AdamWReference>(
      optim::AdamWOptions{.lr = 0.02f, .beta2 = 0.9f, .weight_decay = 0.1f, .amsgrad = true});
}

// The dispatches that one step of `opt` records.
std::uint64_t step_dispatches(optim::Optimizer& opt, const Matrix& found_inf = {}) {
  const auto engine = opt.parameters()[0].value().engine();
  const auto before = engine.stats().dispatches;
  opt.step(found_inf);
  return engine.stats().dispatches - before;
}

TEST(NnOptim, AStepOverManySmallParametersRecordsFewDispatches) {
  std::vector<Parameter> ps;
  for (int i = 0; i < 64; ++i) {
    ps.push_back(make_param(fmt::format("p{}", i), {256}, values(256, 1.0, i)));
    set_grad(ps.back(), values(256, 0.5, 2.0 * i));
  }
  optim::AdamW adam(ps);
  optim::Sgd sgd(ps, {.lr = 0.1f, .momentum = 0.9f});
  const auto no_inf = Matrix::zeros(Shape{}, ps[0].value().engine());
  EXPECT_EQ(step_dispatches(adam), 10u);  // 7 parameters a dispatch
  EXPECT_EQ(step_dispatches(adam, no_inf), 10u + 1);  // and the update counts
  EXPECT_EQ(step_dispatches(sgd), 8u);  // 8 a dispatch
  EXPECT_EQ(step_dispatches(sgd, no_inf), 8u + 1);
  optim::Adam amsgrad(ps, {.amsgrad = true});
  EXPECT_EQ(step_dispatches(amsgrad), 13u);  // 5 parameters a dispatch
  // Parameters whose update counts differ push different values: 63 of one
  // count and 1 of another.
  ps[10].zero_grad();
  adam.step();
  set_grad(ps[10], values(256, 0.5, 20.0));
  EXPECT_EQ(step_dispatches(adam), 9u + 1);
  EXPECT_EQ(step_dispatches(adam, no_inf), 10u + 1);
}

// A parameter past maxStorageBufferRange is updated in element ranges, each
// an item of its own, next to small parameters in the same dispatch.
TEST(NnOptim, AParameterPastTheStorageRangeIsUpdatedInRanges) {
  const auto engine = oa::Engine::default_engine();
  const std::uint64_t range = engine.device().max_storage_buffer_range;
  if (range > (std::uint64_t{1} << 27)) GTEST_SKIP() << "maxStorageBufferRange " << range << " makes a parameter past it too large to test";
  const std::int64_t per = static_cast<std::int64_t>(range / 4) / 1024 * 1024, n = per + 1500;
  const Parameter big("big", Matrix::uniform({n}, -1, 1, 3, engine));
  const auto small = make_param("small", {300}, values(300, 1.0, 0.0));
  const optim::AdamWOptions o{.lr = 0.01f, .weight_decay = 0.1f};
  optim::AdamW adam({small, big}, o);
  const auto p0 = big.value().to_vector();
  oa::backward(oa::matrix::affine(big.value(), 1.0f, 0.0f), Matrix::uniform({n}, -1, 1, 4, engine));
  set_grad(small, values(300, 0.5, 1.0));
  const auto g = big.grad().to_vector();
  EXPECT_EQ(step_dispatches(adam), 1u);  // small, then big's two ranges
  const auto got = big.value().to_vector();
  // Elements on both sides of the range boundary and at the ends, against the reference.
  for (std::int64_t i : {std::int64_t{0}, per - 2, per - 1, per, per + 1, n - 1}) {
    oa::reference::AdamWReference r{o};
    std::vector<double> p{p0[static_cast<std::size_t>(i)]};
    r.step(p, {g[static_cast<std::size_t>(i)]}, o.lr);
    EXPECT_TRUE(matches({got[static_cast<std::size_t>(i)]}, p)) << "element " << i;
  }
}

TEST(NnOptim, RejectsBadOptionsAndParameters) {
  auto a = make_param("a", {2}, {1, 2});
  auto a2 = make_param("a", {3}, {1, 2, 3});
  auto expect_invalid = [](auto&& f, const char* part) { EXPECT_TRUE(oa_test::throws(f, oa::ErrorKind::InvalidArgument, {part})); };
  expect_invalid([&] { optim::Sgd({a}, {.nesterov = true}); }, "nesterov");
  expect_invalid([&] { optim::Sgd({a}, {.lr = -1.0f}); }, "lr");
  expect_invalid([&] { optim::Sgd({a, a}); }, "parameter 'a' is given twice");
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
  EXPECT_EQ(engine.stats().host_waits, before.host_waits);  // nothing read back yet
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

TEST(NnOptim, ParametersOfTwoModulesThatShareNames) {
  // Two modules' lists joined: names repeat, so those parameters' state is
  // keyed by position; the state round-trips through a checkpoint.
  oa::test::TempDir dir;
  auto w1 = make_param("weight", {2}, {1, 2}), b = make_param("bias", {2}, {3, 4}), w2 = make_param("weight", {3}, {5, 6, 7});
  optim::AdamW adam({w1, b, w2});
  EXPECT_EQ(adam.state_names(), (std::vector<std::string>{"weight@0", "bias", "weight@2"}));
  set_grad(w1, {0.5, -1});
  set_grad(w2, {1, 2, 3});
  adam.step();
  std::vector<std::string> names;
  for (const auto& [name, m] : adam.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight@0.exp_avg", "weight@0.exp_avg_sq", "bias.exp_avg", "bias.exp_avg_sq",
                                             "weight@2.exp_avg", "weight@2.exp_avg_sq"}));
  adam.save_state(dir / "opt.safetensors");
  EXPECT_EQ(oa::ml::read_safetensors_metadata(dir / "opt.safetensors").at("weight@2.step"), "1");
  auto c1 = Parameter("weight", Matrix::from_vector({2}, w1.value().to_vector()));
  auto c2 = Parameter("bias", Matrix::from_vector({2}, b.value().to_vector()));
  auto c3 = Parameter("weight", Matrix::from_vector({3}, w2.value().to_vector()));
  optim::AdamW resumed({c1, c2, c3});
  resumed.load_state(dir / "opt.safetensors");
  EXPECT_EQ(resumed.parameter_steps(), (std::vector<std::int64_t>{1, 0, 1}));
  for (auto* opt : {&adam, &resumed}) {
    const auto& ps = opt->parameters();
    set_grad(ps[0], {1, 1});
    set_grad(ps[2], {-1, 0, 1});
    opt->step();
  }
  EXPECT_EQ(w1.value().to_vector(), c1.value().to_vector());
  EXPECT_EQ(w2.value().to_vector(), c3.value().to_vector());
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

// Adam with amsgrad resumes bit for bit from a file and from memory (the
// running maxima included); a state saved with amsgrad on is refused, naming it, by one with it off.
TEST(NnOptim, AmsgradStateRoundTripsAndAMismatchIsNamed) {
  oa::test::TempDir dir;
  const optim::AdamOptions o{.lr = 0.02f, .weight_decay = 0.1f, .amsgrad = true};
  auto w = make_param("w", {4, 3}, values(12, 1.0, 0.1));
  optim::Adam adam({w}, o);
  for (int s = 0; s < 3; ++s) {
    set_grad(w, values(12, 1.0 / (1 + s), s));
    adam.step();
  }
  adam.save_state(dir / "adam.safetensors");
  EXPECT_EQ(oa::ml::read_safetensors_metadata(dir / "adam.safetensors").at("optimizer"), "adam");
  oa::ml::NamedMatrices saved;
  for (const auto& [name, m] : adam.state()) saved.emplace_back(name, Matrix::from_vector(m.shape(), m.to_vector()));
  auto w_file = Parameter("w", Matrix::from_vector({4, 3}, w.value().to_vector()));
  auto w_memory = Parameter("w", Matrix::from_vector({4, 3}, w.value().to_vector()));
  optim::Adam from_file({w_file}, o), from_memory({w_memory}, o);
  from_file.load_state(dir / "adam.safetensors");
  from_memory.load_state(saved, adam.lr(), adam.steps(), adam.parameter_steps());
  for (auto* opt : {&adam, &from_file, &from_memory}) {
    set_grad(opt->parameters()[0], values(12, 0.1, 5.0));  // small: the running maxima decide
    opt->step();
  }
  EXPECT_EQ(w.value().to_vector(), w_file.value().to_vector());
  EXPECT_EQ(w.value().to_vector(), w_memory.value().to_vector());

  optim::Adam plain({w_file}, {.weight_decay = 0.1f});
  EXPECT_TRUE(oa_test::throws([&] { plain.load_state(dir / "adam.safetensors"); }, oa::ErrorKind::InvalidArgument,
                              {"'w.max_exp_avg_sq'", "saved with amsgrad on"}));
  optim::AdamW adamw({w_file}, {.amsgrad = true});
  EXPECT_TRUE(oa_test::throws([&] { adamw.load_state(dir / "adam.safetensors"); }, oa::ErrorKind::InvalidArgument,
                              {"'adam', not 'adamw'"}));
  saved.pop_back();
  EXPECT_TRUE(oa_test::throws([&] { from_memory.load_state(saved, 0.01f, 4, {4}); }, oa::ErrorKind::InvalidArgument,
                              {"'w.max_exp_avg_sq'", "missing", "amsgrad on"}));
}

}  // namespace
