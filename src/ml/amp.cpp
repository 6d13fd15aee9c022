// GradScaler: its two ops (matrix/op_def.hpp) over the kernels
// ml/optim/unscale_grads and ml/optim/update_scale, and the host-side stages.
#include "oa/ml/amp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "matrix/op_def.hpp"
#include "ml/update_items.hpp"
#include "oa/matrix/elementwise.hpp"

namespace oa::ml::amp {

namespace {

using namespace detail::op_def;

const char* const kScaler = "oa::ml::amp::GradScaler";

// The scaler's device state that an op reads besides its operands (untraced).
struct UnscaleAttributes {
  Matrix scale, found_inf;
  static constexpr std::tuple<> fields{};
};

// Every gradient times 1 / scale in place, found_inf set on an inf or NaN:
// results are the gradients themselves. Multi-tensor (ml/update_items.hpp):
// kItems element chunks a dispatch.
const Op<UnscaleAttributes> kUnscaleGrads{
    {.name = "oa::ml::amp::unscale_grads",
     .inputs = {"gradient"},
     .outputs = -1,
     .infer = [](const OpCall<UnscaleAttributes>& c) {
       std::vector<OutputSpec> out;
       for (std::size_t j = 0; j < c.inputs.size(); ++j) out.push_back({c.inputs[j].shape(), DType::F32, false, static_cast<int>(j)});
       return out;
     },
     .lower = {{DType::F32,
                [](const OpCall<UnscaleAttributes>& call, const std::vector<Matrix>&, std::vector<ComputeDispatch>& ds) {
                  items::batch(call.engine, call.inputs, [&](std::span<const items::Item> batch, std::uint64_t groups) {
                    ComputeDispatch d;
                    d.kernel = kernels::ml_optim_unscale_grads;
                    for (std::size_t k = 0; k < items::kItems; ++k) {
                      const items::Item& it = items::at(batch, k);
                      d.bindings.push_back(items::binding(call.inputs[it.tensor], it, runtime::Access::ReadWrite));
                    }
                    d.bindings.push_back(BufferBinding::read(call.attributes.scale.storage()));
                    d.bindings.push_back(BufferBinding::read_write(call.attributes.found_inf.storage()));
                    d.push.set(push::ml_optim_unscale_grads{.items = items::item_counts(batch)});
                    d.groups = {groups, 1, 1};
                    ds.push_back(std::move(d));
                  });
                }}},
     .variadic = true}};

struct UpdateAttributes {
  float growth = 0, backoff = 0;
  std::int64_t growth_interval = 0;
  static constexpr auto fields = std::tuple{field("growth_factor", &UpdateAttributes::growth),
                                            field("backoff_factor", &UpdateAttributes::backoff),
                                            field("growth_interval", &UpdateAttributes::growth_interval)};
};

// scale, growth_tracker and found_inf, updated in place.
const Op<UpdateAttributes> kUpdateScale{
    {.name = "oa::ml::amp::update_scale",
     .inputs = {"scale", "growth_tracker", "found_inf"},
     .outputs = 3,
     .infer = [](const OpCall<UpdateAttributes>&) {
       return std::vector<OutputSpec>{
           {Shape{}, DType::F32, false, 0}, {Shape{}, DType::I32, false, 1}, {Shape{}, DType::F32, false, 2}};
     },
     .lower = {{DType::F32,
                [](const OpCall<UpdateAttributes>& call, const std::vector<Matrix>&, std::vector<ComputeDispatch>& ds) {
                  ComputeDispatch d;
                  d.kernel = kernels::ml_optim_update_scale;
                  for (const auto& m : call.inputs) d.bindings.push_back(BufferBinding::read_write(m.storage()));
                  const UpdateAttributes& a = call.attributes;
                  d.push.set(push::ml_optim_update_scale{
                      .growth = a.growth, .backoff = a.backoff, .growth_interval = static_cast<std::int32_t>(a.growth_interval)});
                  d.groups = {1, 1, 1};
                  ds.push_back(std::move(d));
                }}}}};

void require_scale(float scale, const char* op) {
  if (!std::isfinite(scale) || scale <= 0) fail(ErrorKind::InvalidArgument, "{}: scale = {} must be finite and positive", op, scale);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options, std::optional<Engine> engine) : options_(options) {
  require_scale(options_.init_scale, kScaler);
  if (!(options_.growth_factor > 1) || !std::isfinite(options_.growth_factor))
    fail(ErrorKind::InvalidArgument, "{}: growth_factor = {} must be finite and > 1", kScaler, options_.growth_factor);
  if (!(options_.backoff_factor > 0 && options_.backoff_factor < 1))
    fail(ErrorKind::InvalidArgument, "{}: backoff_factor = {} must lie in (0, 1)", kScaler, options_.backoff_factor);
  if (options_.growth_interval < 1 || options_.growth_interval > std::numeric_limits<std::int32_t>::max())
    fail(ErrorKind::InvalidArgument, "{}: growth_interval = {} must lie in [1, 2^31 - 1]", kScaler, options_.growth_interval);
  const Engine e = engine ? *engine : Engine::default_engine();
  scale_ = Matrix::full(Shape{}, options_.init_scale, e);
  growth_tracker_ = Matrix::from_i32(Shape{}, std::vector<std::int32_t>{0}, e);
  found_inf_ = Matrix::zeros(Shape{}, e);
}

Matrix GradScaler::scale(const Matrix& loss) const {
  const char* op = "oa::ml::amp::GradScaler::scale";
  detail::require_f32(loss, op, "loss");
  detail::require_same_engine(loss, "loss", scale_, "the scale", op);
  return options_.enabled ? matrix::mul(loss, scale_) : loss;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  const char* op = "oa::ml::amp::GradScaler::unscale_";
  if (!options_.enabled) return;
  if (std::ranges::count(unscaled_, &optimizer))
    fail(ErrorKind::FailedPrecondition, "{}: unscale_ was already called for this optimizer since the last update()", op);
  if (std::ranges::count(stepped_, &optimizer))
    fail(ErrorKind::FailedPrecondition, "{}: unscale_ is called after step() for this optimizer since the last update()", op);
  std::vector<Matrix> grads;
  for (const auto& p : optimizer.parameters()) {
    Matrix g = p.grad();
    if (!g.defined()) continue;
    detail::require_f32(g, op, p.name().c_str());
    detail::require_same_engine(g, p.name().c_str(), scale_, "the scale", op);
    grads.push_back(std::move(g));
  }
  if (!grads.empty()) detail::apply(kUnscaleGrads, grads, UnscaleAttributes{scale_, found_inf_});
  unscaled_.push_back(&optimizer);
}

void GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) return optimizer.step();
  if (std::ranges::count(stepped_, &optimizer))
    fail(ErrorKind::FailedPrecondition, "oa::ml::amp::GradScaler::step: step() was already called for this optimizer since the last update()");
  if (!std::ranges::count(unscaled_, &optimizer)) unscale_(optimizer);
  optimizer.step(found_inf_);
  stepped_.push_back(&optimizer);
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (unscaled_.empty())
    fail(ErrorKind::FailedPrecondition, "oa::ml::amp::GradScaler::update: no inf checks were recorded (call step() or unscale_() first)");
  detail::apply(kUpdateScale, {scale_, growth_tracker_, found_inf_},
                UpdateAttributes{options_.growth_factor, options_.backoff_factor, options_.growth_interval});
  unscaled_.clear();
  stepped_.clear();
}

float GradScaler::get_scale() const { return options_.enabled ? scale_.item() : 1.0f; }

GradScalerState GradScaler::state() const {
  return {scale_.item(), static_cast<std::int64_t>(growth_tracker_.to_i32()[0])};
}

void GradScaler::load_state(const GradScalerState& state) {
  const char* op = "oa::ml::amp::GradScaler::load_state";
  require_scale(state.scale, op);
  if (state.growth_tracker < 0 || state.growth_tracker > std::numeric_limits<std::int32_t>::max())
    fail(ErrorKind::InvalidArgument, "{}: growth_tracker = {} must lie in [0, 2^31 - 1]", op, state.growth_tracker);
  scale_.write(std::vector<float>{state.scale});
  growth_tracker_.write_i32(std::vector<std::int32_t>{static_cast<std::int32_t>(state.growth_tracker)});
}

}  // namespace oa::ml::amp
