// layer_norm and batch_norm_2d: validation, forward and backward lowerings,
// autograd rules.
#include <cmath>
#include <limits>
#include <optional>

#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kLayerNorm = "oa::ml::layer_norm";
constexpr const char* kBatchNorm = "oa::ml::batch_norm_2d";

const detail::ContractRegistration kLayerNormContract{{kLayerNorm, -1, 1, {{"eps", AttributeType::Float}}}};
const detail::ContractRegistration kBatchNormContract{
    {kBatchNorm, -1, 1, {{"training", AttributeType::Bool}, {"momentum", AttributeType::Float}, {"eps", AttributeType::Float}}}};

// The storage bound for an optional operand: its own, or `fallback` (read,
// never used by the kernel) when it is absent.
std::shared_ptr<Storage> or_placeholder(const Matrix& m, const Matrix& fallback) {
  return m.defined() ? m.storage() : fallback.storage();
}

// ── layer_norm ──────────────────────────────────────────────────────────────

// The dx and dweight passes shared by layer_norm and rms_norm
// (layer_norm_backward.comp, then column sums of dy * xhat): appends them to
// `ds` and sets dx / dw where needed. mu: layer_norm's saved row statistic, or
// null for rms_norm (no centring).
void norm_gradients(const char* op, const Matrix& gy, const Matrix& x, const Matrix& weight, const Matrix* mu, const Matrix& rstd,
                    bool need_x, bool need_w, Matrix& dx, Matrix& dw, std::vector<ComputeDispatch>& ds) {
  if (!need_x && !need_w) return;
  const Engine& engine = x.engine();
  const std::int64_t D = x.shape().dim(-1), R = x.numel() / D;
  if (need_x) dx = detail::allocate(engine, x.shape());
  const auto dyxhat = need_w ? engine.allocate(bytes_of(x.numel())) : unused_output(engine);
  const auto dxs = need_x ? dx.storage() : unused_output(engine);
  const auto rows = detail::lower_rows(engine, op, R, D, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/nn/layer_norm_backward";
    for (const bool b : {weight.defined(), need_x, need_w, mu != nullptr}) d.specialization.push_back(b);
    d.bindings = {c.window(x.storage(), D, Access::Read),
                  BufferBinding::read(or_placeholder(weight, x)),
                  c.window(gy.storage(), D, Access::Read),
                  mu ? c.window(mu->storage(), 1, Access::Read) : BufferBinding::read(x.storage()),  // not read without centring
                  c.window(rstd.storage(), 1, Access::Read),
                  need_x ? c.window(dxs, D, Access::Write) : BufferBinding::write(dxs),
                  need_w ? c.window(dyxhat, D, Access::Write) : BufferBinding::write(dyxhat)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(D));
  });
  ds.insert(ds.end(), rows.begin(), rows.end());
  if (need_w) {
    dw = detail::allocate(engine, Shape{D});
    detail::sum_channels(engine, dyxhat, R, D, 1, dw.storage(), ds);
  }
}

// dx, dweight, dbias of layer_norm (each undefined unless needed), recorded as
// one "oa::ml::layer_norm backward" op; mu and rstd are the forward's saved
// statistics (mu: each row's mean minus its first element, layer_norm.comp).
std::vector<Matrix> layer_norm_backward(const Matrix& gy, const Matrix& x, const Matrix& weight, const Matrix& mu,
                                        const Matrix& rstd, const std::vector<bool>& needs) {
  const Engine& engine = x.engine();
  const std::int64_t D = x.shape().dim(-1), R = x.numel() / D;
  const bool need_b = needs[2];
  Matrix dx, dw, db;
  std::vector<ComputeDispatch> ds;
  norm_gradients(kLayerNorm, gy, x, weight, &mu, rstd, needs[0], needs[1], dx, dw, ds);
  if (need_b) {
    db = detail::allocate(engine, Shape{D});
    detail::sum_channels(engine, gy.storage(), R, D, 1, db.storage(), ds);
  }
  SemanticOp op = detail::semantic(kLayerNorm, {&gy, &x, &mu, &rstd}, {}, {}, true);
  for (const Matrix* g : {&dx, &dw, &db})
    if (g->defined()) op.outputs.push_back(g->shape());
  engine.record(std::move(op), ds);
  return {dx, dw, db};
}

}  // namespace

Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps) {
  detail::require_f32(x, kLayerNorm, "x");
  if (x.rank() == 0 || x.shape().dim(-1) == 0)
    fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 and a nonzero last axis", kLayerNorm, x.shape());
  const std::int64_t D = x.shape().dim(-1), R = x.numel() / D;
  if (weight.defined()) require_vector(weight, D, x, kLayerNorm, "weight");
  if (bias.defined()) require_vector(bias, D, x, kLayerNorm, "bias");
  require_range(eps, 0.0, HUGE_VAL, x, kLayerNorm, "eps");
  detail::shader_u32(x.numel(), "element count of x", kLayerNorm);

  const Engine& engine = x.engine();
  Matrix y = detail::allocate(engine, x.shape());
  Matrix mu = detail::allocate(engine, Shape{R}), rstd = detail::allocate(engine, Shape{R});
  const auto ds = detail::lower_rows(engine, kLayerNorm, R, D, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/nn/layer_norm";
    for (const bool b : {weight.defined(), bias.defined()}) d.specialization.push_back(b);
    d.bindings = {c.window(x.storage(), D, Access::Read),      BufferBinding::read(or_placeholder(weight, x)),
                  BufferBinding::read(or_placeholder(bias, x)), c.window(y.storage(), D, Access::Write),
                  c.window(mu.storage(), 1, Access::Write),     c.window(rstd.storage(), 1, Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(D)).f32(static_cast<float>(eps));
  });
  SemanticOp op = detail::semantic(kLayerNorm, {&x}, {&y}, {{"eps", eps}});
  for (const Matrix* m : {&weight, &bias})
    if (m->defined()) op.inputs.push_back(m->shape());
  engine.record(std::move(op), ds);

  autograd::record(kLayerNorm, {x, weight, bias}, {y},
                   [sx = autograd::SavedValue(x), sw = autograd::SavedValue(weight), smu = autograd::SavedValue(mu),
                    srstd = autograd::SavedValue(rstd)](const std::vector<Matrix>& gy, const std::vector<bool>& needs) {
                     return layer_norm_backward(gy[0], sx.get(), sw.get(), smu.get(), srstd.get(), needs);
                   });
  return y;
}

// ── rms_norm ────────────────────────────────────────────────────────────────

namespace {

struct RmsNormAttributes {
  double eps = 0;
  static constexpr auto fields = std::tuple{detail::field("eps", &RmsNormAttributes::eps)};
};

// layer_norm's kernels without centring (CENTER false): outputs y and the
// auxiliary per-row rstd that the backward reads.
const detail::Op<RmsNormAttributes> kRmsNorm{
    {.name = "oa::ml::rms_norm",
     .inputs = {"x", {"weight", true}},
     .infer = [](const detail::OpCall<RmsNormAttributes>& c) {
       const Matrix &x = c.inputs[0], &weight = c.inputs[1];
       if (x.rank() == 0 || x.shape().dim(-1) == 0)
         fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 and a nonzero last axis", c.name, x.shape());
       const std::int64_t D = x.shape().dim(-1);
       if (weight.defined()) require_vector(weight, D, x, c.name, "weight");
       require_range(c.attributes.eps, 0.0, HUGE_VAL, x, c.name, "eps");
       detail::shader_u32(x.numel(), "element count of x", c.name);
       return std::vector<detail::OutputSpec>{{x.shape()}, {Shape{x.numel() / D}, DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const detail::OpCall<RmsNormAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &x = c.inputs[0], &weight = c.inputs[1];
                  const std::int64_t D = x.shape().dim(-1), R = x.numel() / D;
                  const auto rows = detail::lower_rows(c.engine, c.name, R, D, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& r) {
                    d.kernel = "ml/nn/layer_norm";
                    for (const bool b : {weight.defined(), false, false}) d.specialization.push_back(b);  // no bias, no centring
                    d.bindings = {r.window(x.storage(), D, Access::Read),          BufferBinding::read(or_placeholder(weight, x)),
                                  BufferBinding::read(x.storage()),                r.window(out[0].storage(), D, Access::Write),
                                  BufferBinding::write(unused_output(c.engine)),   r.window(out[1].storage(), 1, Access::Write)};
                    d.push.u32(static_cast<std::uint32_t>(r.count)).u32(static_cast<std::uint32_t>(D)).f32(static_cast<float>(c.attributes.eps));
                  });
                  ds.insert(ds.end(), rows.begin(), rows.end());
                }}},
     .saves = [](const detail::OpCall<RmsNormAttributes>&, const std::vector<bool>&) {
       return detail::Saves{{true, true}, {false, true}};
     },
     .backward = [](const detail::BackwardCall<RmsNormAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &x = c.inputs[0], &weight = c.inputs[1], &rstd = c.outputs[1];
       const Engine& engine = x.engine();
       Matrix dx, dw;
       std::vector<ComputeDispatch> ds;
       norm_gradients(c.name, gy, x, weight, nullptr, rstd, c.needs[0], c.needs[1], dx, dw, ds);
       SemanticOp op = detail::semantic(c.name, {&gy, &x, &rstd}, {}, {}, true);
       for (const Matrix* g : {&dx, &dw})
         if (g->defined()) op.outputs.push_back(g->shape());
       engine.record(std::move(op), ds);
       return std::vector<Matrix>{dx, dw};
     }}};

}  // namespace

Matrix rms_norm(const Matrix& x, const Matrix& weight, std::optional<double> eps) {
  return detail::apply(kRmsNorm, {x, weight}, {eps.value_or(std::numeric_limits<float>::epsilon())})[0];
}

// ── batch_norm_2d ───────────────────────────────────────────────────────────

namespace {

enum BatchNormMode : std::uint32_t { Normalize = 0, DyXhat = 1, DxBatch = 2, DxRunning = 3 };

struct BatchNormGeometry {
  std::int64_t N, C, S;  // S = H * W
  std::int64_t count() const { return N * S; }
};

// One elementwise pass of ml/nn/batch_norm over x's NCHW elements; `training`:
// stat holds the batch statistics about each channel's first value.
ComputeDispatch batch_norm_pass(BatchNormMode mode, bool training, const BatchNormGeometry& g, const Matrix& x, const Matrix& weight,
                                const Matrix& bias, const std::shared_ptr<Storage>& dy, const std::shared_ptr<Storage>& stat,
                                const std::shared_ptr<Storage>& sdy, const std::shared_ptr<Storage>& sdyxhat,
                                const std::shared_ptr<Storage>& out) {
  const std::int64_t n = x.numel();
  ComputeDispatch d;
  d.kernel = "ml/nn/batch_norm";
  d.specialization = {mode, weight.defined(), bias.defined(), training};
  d.bindings = {BufferBinding::read(x.storage()),
                BufferBinding::read(dy ? dy : x.storage()),
                BufferBinding::read(stat),
                BufferBinding::read(or_placeholder(weight, x)),
                BufferBinding::read(or_placeholder(bias, x)),
                BufferBinding::read(sdy ? sdy : x.storage()),
                BufferBinding::read(sdyxhat ? sdyxhat : x.storage()),
                BufferBinding::write(out)};
  d.push.u32(static_cast<std::uint32_t>(n)).u32(static_cast<std::uint32_t>(g.C)).u32(static_cast<std::uint32_t>(g.S));
  d.push.f32(static_cast<float>(1.0 / static_cast<double>(g.count())));
  d.groups = {detail::groups_for(n, 1024), 1, 1};
  return d;
}

// dx, dweight, dbias of batch_norm_2d, recorded as one "oa::ml::batch_norm_2d backward" op.
std::vector<Matrix> batch_norm_backward(const Matrix& gy, const Matrix& x, const Matrix& weight, const Matrix& stat,
                                        bool training, const std::vector<bool>& needs) {
  const Engine& engine = x.engine();
  const BatchNormGeometry g{x.shape()[0], x.shape()[1], x.shape()[2] * x.shape()[3]};
  const bool need_x = needs[0], need_w = needs[1], need_b = needs[2];
  std::vector<ComputeDispatch> ds;
  Matrix dx, dw, db;
  // Channel sums of dy * xhat (the weight gradient) and of dy (the bias
  // gradient); the input gradient needs both when the statistics came from the batch.
  std::shared_ptr<Storage> sdyxhat, sdy;
  if (need_w || (need_x && training)) {
    const auto dyxhat = engine.allocate(bytes_of(x.numel()));
    ds.push_back(batch_norm_pass(DyXhat, training, g, x, weight, Matrix(), gy.storage(), stat.storage(), nullptr, nullptr, dyxhat));
    sdyxhat = need_w ? (dw = detail::allocate(engine, Shape{g.C})).storage() : engine.allocate(bytes_of(g.C));
    detail::sum_channels(engine, dyxhat, g.N, g.C, g.S, sdyxhat, ds);
  }
  if (need_b || (need_x && training)) {
    sdy = need_b ? (db = detail::allocate(engine, Shape{g.C})).storage() : engine.allocate(bytes_of(g.C));
    detail::sum_channels(engine, gy.storage(), g.N, g.C, g.S, sdy, ds);
  }
  if (need_x) {
    dx = detail::allocate(engine, x.shape());
    ds.push_back(batch_norm_pass(training ? DxBatch : DxRunning, training, g, x, weight, Matrix(), gy.storage(), stat.storage(), sdy,
                                 sdyxhat, dx.storage()));
  }
  SemanticOp op = detail::semantic(kBatchNorm, {&gy, &x, &stat}, {}, {{"training", training}}, true);
  for (const Matrix* m : {&dx, &dw, &db})
    if (m->defined()) op.outputs.push_back(m->shape());
  engine.record(std::move(op), ds);
  return {dx, dw, db};
}

// One pass of ml/nn/batch_norm_moments (PASS 0: s1 unused) and the block
// totals per channel into `out` [C].
void batch_norm_moments(std::uint32_t pass, const BatchNormGeometry& g, const Matrix& x, const std::shared_ptr<Storage>& s1,
                        const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  const Engine& engine = x.engine();
  const std::int64_t blocks = detail::groups_for(g.count(), 4096);
  const auto part = engine.allocate(bytes_of(g.C * blocks));
  ComputeDispatch d;
  d.kernel = "ml/nn/batch_norm_moments";
  d.specialization = {pass};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::read(s1 ? s1 : x.storage()), BufferBinding::write(part)};
  d.push.u32(static_cast<std::uint32_t>(g.C)).u32(static_cast<std::uint32_t>(g.S)).u32(static_cast<std::uint32_t>(g.count()));
  d.push.f32(static_cast<float>(1.0 / static_cast<double>(g.count())));
  d.groups = {static_cast<std::uint64_t>(blocks), static_cast<std::uint64_t>(g.C), 1};
  ds.push_back(std::move(d));
  detail::reduce_rows(engine, part, g.C, blocks, detail::RowReduction::Sum, 1.0f, out, ds);
}

}  // namespace

Matrix batch_norm_2d(const Matrix& x, const Matrix& weight, const Matrix& bias, const Matrix& running_mean,
                     const Matrix& running_var, bool training, double momentum, double eps) {
  detail::require_f32(x, kBatchNorm, "x");
  const Shape& s = x.shape();
  if (s.rank() != 4 || s.numel() == 0)
    fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero extents; found {}", kBatchNorm, s);
  const BatchNormGeometry g{s[0], s[1], s[2] * s[3]};
  if (weight.defined()) require_vector(weight, g.C, x, kBatchNorm, "weight");
  if (bias.defined()) require_vector(bias, g.C, x, kBatchNorm, "bias");
  require_vector(running_mean, g.C, x, kBatchNorm, "running_mean");
  require_vector(running_var, g.C, x, kBatchNorm, "running_var");
  if (running_mean.storage() == running_var.storage())
    fail(ErrorKind::InvalidArgument, "{}: running_mean and running_var {} share storage (x {})", kBatchNorm, running_mean.shape(), s);
  require_range(momentum, 0.0, 1.0, x, kBatchNorm, "momentum");
  require_range(eps, 0.0, HUGE_VAL, x, kBatchNorm, "eps");
  if (training && g.count() < 2)
    fail(ErrorKind::InvalidArgument, "{}: training needs more than one value per channel; x {} has {}", kBatchNorm, s, g.count());
  detail::shader_u32(s.numel(), "element count of x", kBatchNorm);

  const Engine& engine = x.engine();
  Matrix y = detail::allocate(engine, s);
  Matrix stat = detail::allocate(engine, Shape{2, g.C});  // [mu; rstd] per channel (batch_norm_stats.comp)
  std::vector<ComputeDispatch> ds;
  std::shared_ptr<Storage> s1, s2;
  if (training) {
    s1 = engine.allocate(bytes_of(g.C));
    s2 = engine.allocate(bytes_of(g.C));
    batch_norm_moments(0, g, x, nullptr, s1, ds);
    batch_norm_moments(1, g, x, s1, s2, ds);
  }
  {
    const auto stats_access = training ? runtime::Access::ReadWrite : runtime::Access::Read;
    const double count = static_cast<double>(g.count());
    ComputeDispatch d;
    d.kernel = "ml/nn/batch_norm_stats";
    d.specialization = {training};
    d.bindings = {BufferBinding::read(training ? s1 : running_mean.storage()),
                  BufferBinding::read(training ? s2 : running_var.storage()),
                  BufferBinding{running_mean.storage(), stats_access},
                  BufferBinding{running_var.storage(), stats_access},
                  BufferBinding::write(stat.storage()),
                  BufferBinding::read(x.storage())};
    d.push.u32(static_cast<std::uint32_t>(g.C)).u32(static_cast<std::uint32_t>(g.S)).f32(static_cast<float>(1.0 / count));
    d.push.f32(static_cast<float>(count > 1 ? count / (count - 1) : 1.0)).f32(static_cast<float>(eps)).f32(static_cast<float>(momentum));
    d.groups = {detail::groups_for(g.C, 64), 1, 1};
    ds.push_back(std::move(d));
  }
  ds.push_back(batch_norm_pass(Normalize, training, g, x, weight, bias, nullptr, stat.storage(), nullptr, nullptr, y.storage()));
  SemanticOp op = detail::semantic(kBatchNorm, {&x}, {&y}, {{"training", training}, {"momentum", momentum}, {"eps", eps}});
  for (const Matrix* m : {&weight, &bias, &running_mean, &running_var})
    if (m->defined()) op.inputs.push_back(m->shape());
  engine.record(std::move(op), ds);
  if (training) {
    running_mean.storage()->bump_version();
    running_var.storage()->bump_version();
  }

  autograd::record(kBatchNorm, {x, weight, bias}, {y},
                   [sx = autograd::SavedValue(x), sw = autograd::SavedValue(weight), sstat = autograd::SavedValue(stat),
                    training](const std::vector<Matrix>& gy, const std::vector<bool>& needs) {
                     return batch_norm_backward(gy[0], sx.get(), sw.get(), sstat.get(), training, needs);
                   });
  return y;
}

}  // namespace oa::ml
