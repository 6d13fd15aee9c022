// GradScaler (oa/ml/amp.hpp): scale and unscale against a host computation,
// the skipped step on inf/NaN (parameters bitwise unchanged, the update not
// counted), back-off and growth, a captured step, its errors; and a small
// transformer trained a few steps under F16 and BF16 autocast against F32.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "models.hpp"
#include "oa/oa.hpp"
#include "reference/optim.hpp"
#include "support/expect.hpp"

namespace {

using oa::DType;
using oa::Matrix;
using oa::Shape;
using oa::ml::Parameter;
using oa::ml::amp::GradScaler;
namespace optim = oa::ml::optim;
namespace mx = oa::matrix;

// Gives p the gradient `g` * scaler scale: backward of scale(sum(p * g)).
void scaled_grad(GradScaler& scaler, const Parameter& p, const std::vector<float>& g) {
  p.zero_grad();
  oa::backward(scaler.scale(mx::sum_all(mx::mul(p.value(), Matrix::from_vector(p.shape(), g)))));
}

Parameter param(const std::string& name, std::vector<float> v) {
  return Parameter(name, Matrix::from_vector({static_cast<std::int64_t>(v.size())}, v));
}

TEST(NnGradScaler, ScaleAndUnscaleMatchTheHost) {
  GradScaler scaler({.init_scale = 1024.0f});
  const Matrix loss = Matrix::from_vector({2}, std::vector<float>{1.5f, -3.25f});
  EXPECT_EQ(scaler.scale(loss).to_vector(), (std::vector<float>{1536.0f, -3328.0f}));
  auto p = param("p", {1, 2, 3}), q = param("q", {4, 5});
  const std::vector<float> gp = {0.1f, -2.0f, 3e-3f}, gq = {7.0f, -1e-4f};
  p.zero_grad();
  oa::backward(scaler.scale(mx::add(mx::sum_all(mx::mul(p.value(), Matrix::from_vector({3}, gp))),
                                    mx::sum_all(mx::mul(q.value(), Matrix::from_vector({2}, gq))))));
  std::vector<float> want_p, want_q;
  for (float g : gp) want_p.push_back(g * 1024.0f);
  for (float g : gq) want_q.push_back(g * 1024.0f);
  EXPECT_EQ(p.grad().to_vector(), want_p);
  EXPECT_EQ(q.grad().to_vector(), want_q);
  optim::Sgd sgd({p, q}, {.lr = 0.5f});
  oa::TraceCapture trace(loss.engine());
  scaler.unscale_(sgd);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::ml::amp::unscale_grads");
  EXPECT_EQ(ops[0].dispatches, 1u);  // both gradients in one multi-tensor dispatch
  EXPECT_EQ(p.grad().to_vector(), gp);  // times 1 / 2^10: exact
  EXPECT_EQ(q.grad().to_vector(), gq);
  EXPECT_EQ(scaler.found_inf().item(), 0.0f);
  scaler.step(sgd);  // already unscaled: not again
  EXPECT_EQ(p.value().to_vector(), (std::vector<float>{1 - 0.5f * gp[0], 2 - 0.5f * gp[1], 3 - 0.5f * gp[2]}));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0f);
}

// An inf or NaN gradient skips the step on the device: parameters and state
// unchanged, the update not counted (the next one is a first update).
// Eleven gradients, some of several workgroups, in two multi-tensor
// dispatches: each is unscaled exactly, and an inf in the second dispatch's
// last gradient sets found_inf (it is clear while that gradient is finite).
TEST(NnGradScaler, UnscalesManyGradientsAcrossDispatches) {
  const std::vector<std::int64_t> sizes = {1, 7, 300, 2048, 2049, 5, 64, 129, 3, 1000, 4100};
  for (bool with_inf : {false, true}) {
    GradScaler scaler({.init_scale = 64.0f});
    std::vector<Parameter> params;
    std::vector<std::vector<float>> want;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      std::vector<float> g(static_cast<std::size_t>(sizes[k]));
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((i * 7 + k * 13) % 29) * 0.125f - 1.5f;
      if (with_inf && k + 1 == sizes.size()) g[4097] = std::numeric_limits<float>::infinity();
      params.push_back(param(fmt::format("p{}", k), std::vector<float>(g.size(), 1.0f)));
      scaled_grad(scaler, params.back(), g);
      want.push_back(g);
    }
    optim::Sgd sgd(params, {.lr = 0.5f});
    oa::TraceCapture trace(params[0].value().engine());
    scaler.unscale_(sgd);
    const auto ops = trace.ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].dispatches, 2u);  // 8 gradients, then 3
    for (std::size_t k = 0; k < sizes.size(); ++k) EXPECT_EQ(params[k].grad().to_vector(), want[k]) << k;  // times 64, then 1 / 64: exact
    EXPECT_EQ(scaler.found_inf().item(), with_inf ? 1.0f : 0.0f);
  }
}

TEST(NnGradScaler, SkipsTheStepOnInfOrNaNWithoutCountingIt) {
  const float bad_values[] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (float bad : bad_values) {
    GradScaler scaler({.init_scale = 256.0f});
    auto a = param("a", {0.5f, -1.0f, 2.0f}), b = param("b", {3.0f, 4.0f}), c = param("c", {-1.0f});
    optim::AdamW adam({a, b}, {.lr = 0.1f});
    optim::Sgd sgd({c}, {.lr = 0.1f, .momentum = 0.9f});
    const auto a0 = a.value().to_vector(), b0 = b.value().to_vector();
    scaled_grad(scaler, a, {1.0f, bad, 1.0f});
    scaled_grad(scaler, b, {1.0f, 2.0f});
    scaled_grad(scaler, c, {1.0f});
    scaler.unscale_(adam);
    scaler.step(sgd);  // clean gradients, but the scaler's flag is shared: skipped too
    scaler.step(adam);
    EXPECT_NE(scaler.found_inf().item(), 0.0f);
    scaler.update();
    EXPECT_EQ(a.value().to_vector(), a0);
    EXPECT_EQ(b.value().to_vector(), b0);
    EXPECT_EQ(c.value().to_vector(), std::vector<float>{-1.0f});
    for (const auto& [name, m] : adam.state())
      for (float v : m.to_vector()) EXPECT_EQ(v, 0.0f) << name;
    EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(sgd.parameter_steps(), (std::vector<std::int64_t>{0}));
    EXPECT_EQ(adam.steps(), 1);
    EXPECT_EQ(scaler.get_scale(), 128.0f);
    EXPECT_EQ(scaler.found_inf().item(), 0.0f);

    // A clean step now is the first update: as a fresh optimizer's first step.
    auto a2 = param("a", a0), b2 = param("b", b0), c2 = param("c", {-1.0f});
    optim::AdamW fresh({a2, b2}, {.lr = 0.1f});
    optim::Sgd fresh_sgd({c2}, {.lr = 0.1f, .momentum = 0.9f});
    scaled_grad(scaler, a, {1.0f, -1.0f, 0.25f});
    scaled_grad(scaler, b, {1.0f, 2.0f});
    scaled_grad(scaler, c, {1.0f});
    scaler.step(adam);
    scaler.step(sgd);
    scaler.update();
    GradScaler unit({.init_scale = 1.0f});
    scaled_grad(unit, a2, {1.0f, -1.0f, 0.25f});
    scaled_grad(unit, b2, {1.0f, 2.0f});
    scaled_grad(unit, c2, {1.0f});
    fresh.step();
    fresh_sgd.step();
    EXPECT_EQ(a.value().to_vector(), a2.value().to_vector());
    EXPECT_EQ(b.value().to_vector(), b2.value().to_vector());
    EXPECT_EQ(c.value().to_vector(), c2.value().to_vector());
    EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{1, 1}));
  }
}

TEST(NnGradScaler, BacksOffAndGrowsAsTorch) {
  GradScaler scaler({.init_scale = 8.0f, .growth_factor = 4.0f, .backoff_factor = 0.25f, .growth_interval = 3});
  auto p = param("p", {1.0f});
  optim::Sgd sgd({p}, {.lr = 0.0f});
  const float inf = std::numeric_limits<float>::infinity();
  // (gradient, scale after update, growth tracker after update)
  const std::vector<std::tuple<float, float, std::int64_t>> steps = {
      {1, 8, 1}, {1, 8, 2}, {1, 32, 0}, {inf, 8, 0}, {1, 8, 1}, {inf, 2, 0}, {1, 2, 1}, {1, 2, 2}, {1, 8, 0}};
  for (const auto& [g, scale, tracker] : steps) {
    scaled_grad(scaler, p, {g});
    scaler.step(sgd);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), scale);
    EXPECT_EQ(scaler.state().growth_tracker, tracker);
  }
  // The state round-trips (as a checkpoint keeps it).
  GradScaler other;
  other.load_state(scaler.state());
  EXPECT_EQ(other.get_scale(), 8.0f);
  EXPECT_EQ(other.state().growth_tracker, 0);
}

TEST(NnGradScaler, ACapturedStepSkipsAndScalesOnReplay) {
  GradScaler scaler({.init_scale = 64.0f, .growth_interval = 2});
  auto p = param("p", {1.0f, 2.0f});
  optim::Sgd sgd({p}, {.lr = 0.5f});
  const Matrix g = Matrix::from_vector({2}, std::vector<float>{0.0f, 0.0f});
  auto step = [&] {
    p.zero_grad();
    oa::backward(scaler.scale(mx::sum_all(mx::mul(p.value(), g))));
    scaler.step(sgd);
    scaler.update();
  };
  g.write(std::vector<float>{1.0f, 1.0f});
  step();  // eager
  oa::StepGraph graph(p.value().engine(), step);
  g.write(std::vector<float>{std::numeric_limits<float>::infinity(), 1.0f});
  const auto before = p.value().to_vector();
  graph.replay(p.value().engine());
  EXPECT_EQ(p.value().to_vector(), before);
  EXPECT_EQ(scaler.get_scale(), 32.0f);
  g.write(std::vector<float>{2.0f, -2.0f});
  graph.replay(p.value().engine());
  graph.replay(p.value().engine());
  EXPECT_EQ(p.value().to_vector(), (std::vector<float>{before[0] - 2.0f, before[1] + 2.0f}));
  EXPECT_EQ(scaler.get_scale(), 64.0f);  // grown after two clean steps
  EXPECT_EQ(sgd.parameter_steps(), (std::vector<std::int64_t>{3}));
}

TEST(NnGradScaler, RefusesMisuseAndPassesThroughWhenDisabled) {
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([] { GradScaler s({.init_scale = 0.0f}); }, ErrorKind::InvalidArgument, {"GradScaler", "scale"}));
  EXPECT_TRUE(oa_test::throws([] { GradScaler s({.growth_factor = 1.0f}); }, ErrorKind::InvalidArgument, {"growth_factor"}));
  EXPECT_TRUE(oa_test::throws([] { GradScaler s({.backoff_factor = 1.0f}); }, ErrorKind::InvalidArgument, {"backoff_factor"}));
  EXPECT_TRUE(oa_test::throws([] { GradScaler s({.growth_interval = 0}); }, ErrorKind::InvalidArgument, {"growth_interval"}));
  GradScaler scaler;
  EXPECT_TRUE(oa_test::throws([&] { scaler.update(); }, ErrorKind::FailedPrecondition, {"update", "no inf checks"}));
  EXPECT_TRUE(oa_test::throws([&] { scaler.scale(Matrix::from_i32({1}, std::vector<std::int32_t>{1})); }, ErrorKind::InvalidArgument,
                              {"GradScaler::scale", "loss"}));
  auto p = param("p", {1.0f});
  optim::Sgd sgd({p});
  scaled_grad(scaler, p, {1.0f});
  scaler.unscale_(sgd);
  EXPECT_TRUE(oa_test::throws([&] { scaler.unscale_(sgd); }, ErrorKind::FailedPrecondition, {"unscale_", "already"}));
  scaler.step(sgd);
  EXPECT_TRUE(oa_test::throws([&] { scaler.step(sgd); }, ErrorKind::FailedPrecondition, {"step", "already"}));
  EXPECT_TRUE(oa_test::throws([&] { sgd.step(Matrix::zeros({2})); }, ErrorKind::InvalidArgument, {"sgd_step", "found_inf"}));
  scaler.update();

  GradScaler off({.enabled = false});
  const Matrix loss = Matrix::full(Shape{}, 2.0f);
  EXPECT_TRUE(off.scale(loss).same_as(loss));
  EXPECT_EQ(off.get_scale(), 1.0f);
  p.zero_grad();
  oa::backward(off.scale(mx::sum_all(p.value())));
  off.step(sgd);
  off.update();
  EXPECT_EQ(sgd.parameter_steps(), (std::vector<std::int64_t>{2}));
}

// F32 master weights of an F16 autocast matmul stepped by Adam (L2 decay,
// amsgrad) through the scaler: the first scale overflows F16 (the step is
// skipped on the device), the others update the weights as the f64 reference
// does with the unscaled gradients.
TEST(NnMixedPrecision, AdamWithL2AndAmsgradStepsF32MasterWeightsOfAnF16Forward) {
  const std::vector<float> w0 = {0.5f, -0.25f, 1.0f, 0.75f, -1.0f, 0.125f}, xs = {1.0f, 2.0f, -1.0f, 0.5f, 0.25f, -2.0f};
  const auto w = Parameter("w", Matrix::from_vector({3, 2}, w0));
  const Matrix x = Matrix::from_vector({2, 3}, xs);
  const optim::AdamOptions o{.lr = 0.05f, .beta2 = 0.9f, .weight_decay = 0.1f, .amsgrad = true};
  optim::Adam adam({w}, o);
  oa::reference::AdamReference ref{o};
  std::vector<double> want(w0.begin(), w0.end());
  GradScaler scaler({.init_scale = 131072.0f});  // the first gradient of w overflows F16
  for (int step = 0; step < 4; ++step) {
    Matrix loss;
    {
      oa::AutocastGuard autocast(DType::F16);
      const Matrix y = mx::matmul(x, w.value());
      EXPECT_EQ(y.dtype(), DType::F16);
      loss = mx::sum_all(mx::mul(mx::cast(y, DType::F32), Matrix::full({2, 2}, 0.25f / (1 + step))));
    }
    adam.zero_grad();
    oa::backward(scaler.scale(loss));
    scaler.unscale_(adam);
    const bool skipped = scaler.found_inf().item() != 0;
    EXPECT_EQ(skipped, step == 0);
    EXPECT_EQ(w.grad().dtype(), DType::F32);
    const std::vector<float> g = w.grad().to_vector();
    scaler.step(adam);
    scaler.update();
    if (!skipped) ref.step(want, std::vector<double>(g.begin(), g.end()), o.lr);
  }
  EXPECT_EQ(adam.parameter_steps(), (std::vector<std::int64_t>{3}));
  EXPECT_TRUE(oa_test::near(w.value().to_vector(), want, 2e-6, 2e-6));
}

// A byte-level transformer (the CLI's text model, tiny) trained a few AdamW
// steps: F16 autocast with the scaler, and BF16 autocast, end near F32.
TEST(NnMixedPrecision, ATinyTransformerTrainsInF16AndBF16NearF32) {
  const oa_cli::TextModelConfig config{.context = 8, .layers = 1, .heads = 2, .width = 16};
  const std::int64_t batch = 4, n = batch * config.context;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n)), targets(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>((i * 37 + 11) % 256);
    targets[i] = static_cast<std::int32_t>((tokens[i] * 7 + 3) % 256);
  }
  auto train = [&](std::optional<DType> precision) {
    oa::ml::Generator generator(3);
    auto model = oa_cli::make_text_model(config, generator, oa::Engine::default_engine());
    optim::AdamW adam(model->parameters(), {.lr = 3e-3f});
    GradScaler scaler({.enabled = precision == DType::F16});
    const Matrix x = Matrix::from_i32({batch, config.context}, tokens), y = Matrix::from_i32({n}, targets);
    std::vector<float> losses;
    for (int step = 0; step < 6; ++step) {
      Matrix loss;
      {
        oa::AutocastGuard autocast(precision.value_or(DType::F16), precision.has_value());
        loss = oa::ml::cross_entropy((*model)(x).reshape({n, 256}), y);
      }
      EXPECT_EQ(loss.dtype(), DType::F32);
      adam.zero_grad();
      oa::backward(scaler.scale(loss));
      scaler.step(adam);
      scaler.update();
      losses.push_back(loss.item());
    }
    return std::pair{losses, model->parameters()[0].value().to_vector()};
  };
  const auto [loss32, w32] = train(std::nullopt);
  EXPECT_LT(loss32.back(), loss32.front());
  for (DType low : {DType::F16, DType::BF16}) {
    const double tol = low == DType::F16 ? 5e-3 : 4e-2;
    const auto [loss, w] = train(low);
    for (std::size_t i = 0; i < loss.size(); ++i) EXPECT_NEAR(loss[i], loss32[i], tol * std::abs(loss32[i])) << "step " << i;
    double diff = 0, size = 0;
    for (std::size_t i = 0; i < w.size(); ++i) diff = std::max(diff, double(std::abs(w[i] - w32[i]))), size = std::max(size, double(std::abs(w32[i])));
    EXPECT_LT(diff, 10 * tol * size);
  }
}

}  // namespace
