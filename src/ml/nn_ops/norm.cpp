// layer_norm, rms_norm, group_norm and batch_norm_2d, each declared once (matrix/op_def.hpp):
// validation, forward and backward lowerings.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "matrix/float_lowering.hpp"
#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

using namespace detail::op_def;

// layer_norm's and rms_norm's attribute.
struct EpsAttributes {
  double eps = 0;
  static constexpr auto fields = std::tuple{detail::field("eps", &EpsAttributes::eps)};
};

// The storage bound for an optional operand: its own, or `fallback` (read,
// never used by the kernel) when it is absent.
std::shared_ptr<Storage> or_placeholder(const Matrix& m, const Matrix& fallback) {
  return m.defined() ? m.storage() : fallback.storage();
}

// ── layer_norm ──────────────────────────────────────────────────────────────

// How the layer_norm kernels map a row's columns to weight and bias entries
// (ml/nn/norm_channel.glsl): per column (layer_norm, rms_norm: groups = span =
// 1), or for group_norm over x [N, C, S] viewed as rows [N * G, C / G * S],
// per channel (groups = G, span = S).
struct NormGrouping {
  std::int64_t groups = 1, span = 1;
  bool grouped() const { return groups != 1 || span != 1; }
  // The kernels' push constants G and S (GROUPED is grouped()).
  std::uint32_t G() const { return static_cast<std::uint32_t>(groups); }
  std::uint32_t S() const { return static_cast<std::uint32_t>(span); }
  // Whether the row kernels may read vec4 items (ml/nn/norm_row.glsl): an
  // item's 4 columns then share a channel.
  bool vec4_items() const { return !grouped() || span % 4 == 0; }
};

// The forward pass of layer_norm, rms_norm (center false, no bias) and
// group_norm (layer_norm.comp) over x's rows [R, D]: y, and per row mu (when
// centring) and rstd.
template <typename Attributes>
void norm_forward(const OpCall<Attributes>& c, const Matrix& weight, const Matrix& bias, bool center, std::int64_t D,
                  const NormGrouping& grouping, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
  const Matrix& x = c.inputs[0];
  const std::int64_t R = x.numel() / D;
  const Matrix* rstd = &out[center ? 2 : 1];
  const auto rows = detail::lower_rows(
      c.engine, c.name, R, D, detail::RowLanes::Registers, [&](ComputeDispatch& d, const detail::RowChunk& r) {
        d.kernel = kernels::ml_nn_layer_norm;
        detail::append_row_items(d, D, detail::RowCache::Share, grouping.vec4_items());
        for (const bool b : {weight.defined(), bias.defined(), center, grouping.grouped()}) d.specialization.push_back(b);
        d.bindings = {r.window(x.storage(), D, Access::Read),
                      BufferBinding::read(or_placeholder(weight, x)),
                      BufferBinding::read(or_placeholder(bias, x)),
                      r.window(out[0].storage(), D, Access::Write),
                      center ? r.window(out[1].storage(), 1, Access::Write) : BufferBinding::write(unused_output(c.engine)),
                      r.window(rstd->storage(), 1, Access::Write)};
        d.push.set(push::ml_nn_layer_norm{.R = static_cast<std::uint32_t>(r.count),
                                          .D = static_cast<std::uint32_t>(D),
                                          .eps = static_cast<float>(c.attributes.eps),
                                          .G = grouping.G(),
                                          .S = grouping.S(),
                                          .row0 = static_cast<std::uint32_t>(r.first)});
      });
  ds.insert(ds.end(), rows.begin(), rows.end());
}

// The gradients of layer_norm, rms_norm and group_norm over x's rows [R, D]
// with the saved mu (null for rms_norm: no centring) and rstd, each made when
// its `need` is set: dx by layer_norm_backward.comp, dweight [channels] and
// dbias [channels] by layer_norm_backward_affine.comp over x viewed as
// [R / G, G * D] (one sample a row for group_norm) in slabs of rows, then the
// sums of its per-slab partials over the slabs and the S columns of a channel.
// Appends the dispatches to `ds`.
void norm_gradients(const char* op, const Matrix& gy, const Matrix& x, const Matrix& weight, const Matrix* mu, const Matrix& rstd,
                    std::int64_t D, const NormGrouping& grouping, bool need_x, bool need_w, bool need_b, Matrix& dx, Matrix& dw, Matrix& db,
                    std::vector<ComputeDispatch>& ds) {
  const Engine& engine = x.engine();
  const std::int64_t R = x.numel() / D;
  if (need_x) {
    dx = detail::allocate(engine, x.shape());
    const auto rows = detail::lower_rows(engine, op, R, D, detail::RowLanes::Registers, [&](ComputeDispatch& d, const detail::RowChunk& c) {
      d.kernel = kernels::ml_nn_layer_norm_backward;
      detail::append_row_items(d, D, detail::RowCache::Share, grouping.vec4_items());
      for (const bool b : {weight.defined(), mu != nullptr, grouping.grouped()}) d.specialization.push_back(b);
      d.bindings = {c.window(x.storage(), D, Access::Read),
                    BufferBinding::read(or_placeholder(weight, x)),
                    c.window(gy.storage(), D, Access::Read),
                    mu ? c.window(mu->storage(), 1, Access::Read) : BufferBinding::read(x.storage()),  // not read without centring
                    c.window(rstd.storage(), 1, Access::Read),
                    c.window(dx.storage(), D, Access::Write)};
      d.push.set(push::ml_nn_layer_norm_backward{.R = static_cast<std::uint32_t>(c.count),
                                                 .D = static_cast<std::uint32_t>(D),
                                                 .G = grouping.G(),
                                                 .S = grouping.S(),
                                                 .row0 = static_cast<std::uint32_t>(c.first)});
    });
    ds.insert(ds.end(), rows.begin(), rows.end());
  }
  if (!need_w && !need_b) return;
  // Workgroups of tx items (of `width` columns) by 256 / tx rows, about 1024
  // of them, each slab at least 4 rows per invocation.
  const std::int64_t G = grouping.groups, rows = R / G, L = G * D, width = D % 4 == 0 ? 4 : 1, items = L / width;
  std::int64_t tx = 1;
  while (tx < 64 && tx < items) tx <<= 1;
  const std::int64_t blocks = detail::ceil_div(items, tx);
  const std::int64_t slab_rows = std::max(4 * (256 / tx), detail::ceil_div(rows, std::max<std::int64_t>(1, 1024 / blocks)));
  const auto chunks = detail::row_chunks(engine, op, rows, L);
  std::int64_t slabs = 0;
  for (const auto& c : chunks) slabs += detail::ceil_div(c.count, slab_rows);
  // One slab of per-column sums is the gradient itself.
  const std::int64_t channels = L / grouping.span;
  const bool direct = slabs == 1 && grouping.span == 1;
  const auto partial = [&](bool need, Matrix& grad) {
    if (!need) return unused_output(engine);
    grad = detail::allocate(engine, Shape{channels});
    return direct ? grad.storage() : engine.allocate(bytes_of(std::max<std::int64_t>(slabs, 1) * L));
  };
  const auto pw = partial(need_w, dw), pb = partial(need_b, db);
  std::int64_t slab0 = 0;
  for (const auto& c : chunks) {
    ComputeDispatch d;
    d.kernel = kernels::ml_nn_layer_norm_backward_affine;
    d.specialization = {static_cast<std::uint32_t>(tx), static_cast<std::uint32_t>(width), mu != nullptr, need_w, need_b};
    d.bindings = {c.window(x.storage(), L, Access::Read),
                  c.window(gy.storage(), L, Access::Read),
                  mu ? c.window(mu->storage(), G, Access::Read) : BufferBinding::read(x.storage()),  // not read without centring
                  c.window(rstd.storage(), G, Access::Read),
                  BufferBinding::write(pw),
                  BufferBinding::write(pb)};
    d.push.set(push::ml_nn_layer_norm_backward_affine{.R = static_cast<std::uint32_t>(c.count),
                                                      .L = static_cast<std::uint32_t>(L),
                                                      .D = static_cast<std::uint32_t>(D),
                                                      .G = static_cast<std::uint32_t>(G),
                                                      .slab_rows = static_cast<std::uint32_t>(slab_rows),
                                                      .slab0 = static_cast<std::uint32_t>(slab0)});
    const std::int64_t n = detail::ceil_div(c.count, slab_rows);
    d.groups = {static_cast<std::uint64_t>(blocks), static_cast<std::uint64_t>(n), 1};
    slab0 += n;
    ds.push_back(std::move(d));
  }
  if (direct) return;
  if (need_w) detail::sum_channels(engine, pw, slabs, channels, grouping.span, dw.storage(), ds);
  if (need_b) detail::sum_channels(engine, pb, slabs, channels, grouping.span, db.storage(), ds);
}

// The backward of layer_norm and group_norm (inputs x, weight, bias; outputs
// y, mu, rstd over x's rows [R, D]): dx, dweight and dbias (each undefined
// unless needed) as one backward op.
template <typename Attributes>
std::vector<Matrix> centred_norm_backward(const BackwardCall<Attributes>& c, std::int64_t D, const NormGrouping& grouping) {
  const Matrix &gy = c.grad_outputs[0], &x = c.inputs[0], &weight = c.inputs[1], &mu = c.outputs[1], &rstd = c.outputs[2];
  Matrix dx, dw, db;
  std::vector<ComputeDispatch> ds;
  norm_gradients(c.name, gy, x, weight, &mu, rstd, D, grouping, c.needs[0], c.needs[1], c.needs[2], dx, dw, db, ds);
  c.record(ds, {&gy, &x, &mu, &rstd}, {&dx, &dw, &db});
  return std::vector<Matrix>{dx, dw, db};
}

// The checks of layer_norm and rms_norm: x [..., D] with D > 0, its optional
// weight (and bias) [D], both f32 or both x's dtype (for a 16-bit x, as
// torch's mixed-dtype layer_norm takes f32 parameters), eps >= 0.
void require_norm_operands(const OpCall<EpsAttributes>& c) {
  const Matrix& x = c.inputs[0];
  if (x.rank() == 0 || x.shape().dim(-1) == 0)
    fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 and a nonzero last axis", c.name, x.shape());
  const std::int64_t D = x.shape().dim(-1);
  std::optional<DType> params;  // the first given parameter's dtype
  for (std::size_t i = 1; i < c.inputs.size(); ++i) {
    const Matrix& p = c.inputs[i];
    if (!p.defined()) continue;
    const char* arg = i == 1 ? "weight" : "bias";
    if (!params && p.dtype() != DType::F32 && p.dtype() != x.dtype())
      fail(ErrorKind::InvalidArgument, "{}: {} must be f32 or x's dtype ({} {}); found {} {}", c.name, arg, to_string(x.dtype()), x.shape(),
           to_string(p.dtype()), p.shape());
    require_vector(p, D, x, c.name, arg, params.value_or(p.dtype()));  // the second of one dtype with the first
    params = p.dtype();
  }
  require_range(c.attributes.eps, 0.0, HUGE_VAL, x, c.name, "eps");
  detail::shader_u32(x.numel(), "element count of x", c.name);
}

// x [..., D] normalised over its last axis (layer_norm.comp): outputs y (x's
// dtype) and the auxiliary per-row f32 statistics that the backward reads, mu
// (each row's mean minus its first element) and rstd. A 16-bit x (and
// weight, bias) runs the f32 kernels on widened copies, y rounded once
// (float_lowerings), and so does its backward (widened_backward).
const detail::Op<EpsAttributes> kLayerNorm{
    {.name = "oa::ml::layer_norm",
     .inputs = {"x", {"weight", true}, {"bias", true}},
     .infer = [](const OpCall<EpsAttributes>& c) {
       require_norm_operands(c);
       const Matrix& x = c.inputs[0];
       const std::int64_t R = x.numel() / x.shape().dim(-1);
       return std::vector<OutputSpec>{{x.shape(), x.dtype()}, {Shape{R}, DType::F32, true}, {Shape{R}, DType::F32, true}};
     },
     .lower = detail::float_lowerings<EpsAttributes>(
         [](const OpCall<EpsAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           norm_forward(c, c.inputs[1], c.inputs[2], true, c.inputs[0].shape().dim(-1), {}, out, ds);
         }),
     .saves = [](const OpCall<EpsAttributes>&, const std::vector<bool>&) {
       return Saves{{true, true, false}, {false, true, true}};
     },
     .backward = [](const BackwardCall<EpsAttributes>& c) -> std::vector<Matrix> {
       if (detail::is_half(c.grad_outputs[0].dtype())) return detail::widened_backward<EpsAttributes>(c, kLayerNorm.def.backward);
       return centred_norm_backward(c, c.inputs[0].shape().dim(-1), {});
     }}};

}  // namespace

Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps) {
  return detail::apply(kLayerNorm, {x, weight, bias}, {eps})[0];
}

// ── rms_norm ────────────────────────────────────────────────────────────────

namespace {

// layer_norm's kernels without centring (CENTER false): outputs y and the
// auxiliary per-row rstd that the backward reads.
const detail::Op<EpsAttributes> kRmsNorm{
    {.name = "oa::ml::rms_norm",
     .inputs = {"x", {"weight", true}},
     .infer = [](const OpCall<EpsAttributes>& c) {
       require_norm_operands(c);
       const Matrix& x = c.inputs[0];
       const std::int64_t D = x.shape().dim(-1);
       return std::vector<OutputSpec>{{x.shape()}, {Shape{x.numel() / D}, DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<EpsAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  norm_forward(c, c.inputs[1], Matrix(), false, c.inputs[0].shape().dim(-1), {}, out, ds);
                }}},
     .saves = [](const OpCall<EpsAttributes>&, const std::vector<bool>&) {
       return Saves{{true, true}, {false, true}};
     },
     .backward = [](const BackwardCall<EpsAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &x = c.inputs[0], &weight = c.inputs[1], &rstd = c.outputs[1];
       Matrix dx, dw, db;
       std::vector<ComputeDispatch> ds;
       norm_gradients(c.name, gy, x, weight, nullptr, rstd, x.shape().dim(-1), {}, c.needs[0], c.needs[1], false, dx, dw, db, ds);
       c.record(ds, {&gy, &x, &rstd}, {&dx, &dw});
       return std::vector<Matrix>{dx, dw};
     }}};

}  // namespace

Matrix rms_norm(const Matrix& x, const Matrix& weight, std::optional<double> eps) {
  return detail::apply(kRmsNorm, {x, weight}, {eps.value_or(std::numeric_limits<float>::epsilon())})[0];
}

// ── group_norm ──────────────────────────────────────────────────────────────

namespace {

struct GroupNormAttributes {
  std::int64_t num_groups = 1;
  double eps = 0;
  static constexpr auto fields = std::tuple{detail::field("num_groups", &GroupNormAttributes::num_groups),
                                            detail::field("eps", &GroupNormAttributes::eps)};
};

// x [N, C, *] as rows [N * G, C / G * S] (S: the product of the trailing
// extents), weight and bias per channel.
struct GroupNormView {
  std::int64_t D;
  NormGrouping grouping;
};
GroupNormView group_norm_view(const Matrix& x, std::int64_t num_groups) {
  const Shape& s = x.shape();
  std::int64_t S = 1;
  for (std::size_t a = 2; a < s.rank(); ++a) S *= s[a];
  return {s[1] / num_groups * S, {num_groups, S}};
}

// layer_norm's kernels over the rows of the group view, the affine step per
// channel (GROUPED): outputs y and the auxiliary per-row statistics mu and
// rstd [N * G] that the backward reads.
const detail::Op<GroupNormAttributes> kGroupNorm{
    {.name = "oa::ml::group_norm",
     .inputs = {"x", {"weight", true}, {"bias", true}},
     .infer = [](const OpCall<GroupNormAttributes>& c) {
       const Matrix& x = c.inputs[0];
       const Shape& s = x.shape();
       const std::int64_t G = c.attributes.num_groups;
       bool zero_extent = false;  // other than the batch: N = 0 is an empty batch
       for (std::size_t a = 1; a < s.rank(); ++a) zero_extent = zero_extent || s[a] == 0;
       if (s.rank() < 2 || zero_extent)
         fail(ErrorKind::InvalidArgument, "{}: x must be [N, C, *] with nonzero extents after N; found {}", c.name, s);
       if (G < 1 || s[1] % G != 0)
         fail(ErrorKind::InvalidArgument, "{}: num_groups = {} must be >= 1 and divide the channels C = {} of x {}", c.name, G, s[1], s);
       for (std::size_t i = 1; i < c.inputs.size(); ++i)
         if (c.inputs[i].defined()) require_vector(c.inputs[i], s[1], x, c.name, i == 1 ? "weight" : "bias");
       require_range(c.attributes.eps, 0.0, HUGE_VAL, x, c.name, "eps");
       detail::shader_u32(x.numel(), "element count of x", c.name);
       const Shape stats{s[0] * G};
       return std::vector<OutputSpec>{{s}, {stats, DType::F32, true}, {stats, DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<GroupNormAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  if (c.inputs[0].numel() == 0) return;  // an empty batch
                  const GroupNormView v = group_norm_view(c.inputs[0], c.attributes.num_groups);
                  norm_forward(c, c.inputs[1], c.inputs[2], true, v.D, v.grouping, out, ds);
                }}},
     .saves = [](const OpCall<GroupNormAttributes>&, const std::vector<bool>&) {
       return Saves{{true, true, false}, {false, true, true}};
     },
     .backward = [](const BackwardCall<GroupNormAttributes>& c) {
       const Matrix& x = c.inputs[0];
       if (x.numel() == 0) {  // an empty batch: zero weight and bias gradients, no dispatch
         const Engine& engine = x.engine();
         const Shape channels{x.shape()[1]};
         std::vector<Matrix> grads{c.needs[0] ? detail::allocate(engine, x.shape()) : Matrix(),
                                   c.needs[1] ? detail::zeros(engine, channels) : Matrix(),
                                   c.needs[2] ? detail::zeros(engine, channels) : Matrix()};
         c.record({}, {&c.grad_outputs[0], &x}, {&grads[0], &grads[1], &grads[2]});
         return grads;
       }
       const GroupNormView v = group_norm_view(x, c.attributes.num_groups);
       return centred_norm_backward(c, v.D, v.grouping);
     }}};

}  // namespace

Matrix group_norm(const Matrix& x, std::int64_t num_groups, const Matrix& weight, const Matrix& bias, double eps) {
  return detail::apply(kGroupNorm, {x, weight, bias}, {num_groups, eps})[0];
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
  d.kernel = kernels::ml_nn_batch_norm;
  d.specialization = {mode, weight.defined(), bias.defined(), training};
  d.bindings = {BufferBinding::read(x.storage()),
                BufferBinding::read(dy ? dy : x.storage()),
                BufferBinding::read(stat),
                BufferBinding::read(or_placeholder(weight, x)),
                BufferBinding::read(or_placeholder(bias, x)),
                BufferBinding::read(sdy ? sdy : x.storage()),
                BufferBinding::read(sdyxhat ? sdyxhat : x.storage()),
                BufferBinding::write(out)};
  d.push.set(push::ml_nn_batch_norm{.n = static_cast<std::uint32_t>(n),
                                    .C = static_cast<std::uint32_t>(g.C),
                                    .S = static_cast<std::uint32_t>(g.S),
                                    .inv_m = static_cast<float>(1.0 / static_cast<double>(g.count()))});
  d.groups = {detail::groups_for(n, 1024), 1, 1};
  return d;
}

// One pass of ml/nn/batch_norm_moments (PASS 0: s1 unused) and the block
// totals per channel into `out` [C].
void batch_norm_moments(std::uint32_t pass, const BatchNormGeometry& g, const Matrix& x, const std::shared_ptr<Storage>& s1,
                        const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  const Engine& engine = x.engine();
  const std::int64_t blocks = detail::groups_for(g.count(), 4096);
  const auto part = engine.allocate(bytes_of(g.C * blocks));
  ComputeDispatch d;
  d.kernel = kernels::ml_nn_batch_norm_moments;
  d.specialization = {pass};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::read(s1 ? s1 : x.storage()), BufferBinding::write(part)};
  d.push.set(push::ml_nn_batch_norm_moments{.C = static_cast<std::uint32_t>(g.C),
                                            .S = static_cast<std::uint32_t>(g.S),
                                            .M = static_cast<std::uint32_t>(g.count()),
                                            .inv_m = static_cast<float>(1.0 / static_cast<double>(g.count()))});
  d.groups = {static_cast<std::uint64_t>(blocks), static_cast<std::uint64_t>(g.C), 1};
  ds.push_back(std::move(d));
  detail::reduce_rows(engine, part, g.C, blocks, detail::RowReduction::Sum, 1.0f, out, ds);
}

// momentum is unused (0) when cumulative_average (momentum None).
struct BatchNormAttributes {
  bool training = false;
  double momentum = 0, eps = 0;
  bool cumulative_average = false;
  static constexpr auto fields = std::tuple{detail::field("training", &BatchNormAttributes::training),
                                            detail::field("momentum", &BatchNormAttributes::momentum),
                                            detail::field("eps", &BatchNormAttributes::eps),
                                            detail::field("cumulative_average", &BatchNormAttributes::cumulative_average)};
};

BatchNormGeometry batch_norm_geometry(const Shape& s) { return {s[0], s[1], s[2] * s[3]}; }

// x NCHW normalised per channel: outputs y and the auxiliary statistics
// [mu; rstd] per channel [2, C] (batch_norm_stats.comp) that the backward
// reads. In training the running statistics, and the batch count when given,
// are updated in place.
const detail::Op<BatchNormAttributes> kBatchNorm{
    {.name = "oa::ml::batch_norm_2d",
     .inputs = {"x", {"weight", true}, {"bias", true}, "running_mean", "running_var", {"num_batches_tracked", true, true}},
     .infer = [](const OpCall<BatchNormAttributes>& c) {
       const Matrix &x = c.inputs[0], &weight = c.inputs[1], &bias = c.inputs[2], &running_mean = c.inputs[3], &running_var = c.inputs[4];
       const Matrix& batches = c.inputs[5];
       const char* name = c.name;
       const Shape& s = x.shape();
       if (s.rank() != 4 || s[1] == 0 || s[2] == 0 || s[3] == 0)  // a batch of N = 0 is an empty batch
         fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero C, H and W; found {}", name, s);
       const BatchNormGeometry g = batch_norm_geometry(s);
       if (weight.defined()) require_vector(weight, g.C, x, name, "weight");
       if (bias.defined()) require_vector(bias, g.C, x, name, "bias");
       require_vector(running_mean, g.C, x, name, "running_mean");
       require_vector(running_var, g.C, x, name, "running_var");
       if (running_mean.storage() == running_var.storage())
         fail(ErrorKind::InvalidArgument, "{}: running_mean and running_var {} share storage (x {})", name, running_mean.shape(), s);
       require_range(c.attributes.momentum, 0.0, 1.0, x, name, "momentum");
       if (batches.defined()) {
         require_i32(batches, name, "num_batches_tracked");
         if (batches.rank() != 0)
           fail(ErrorKind::InvalidArgument, "{}: num_batches_tracked must be a scalar []; found {} (x {})", name, batches.shape(), s);
       }
       if (c.attributes.training && c.attributes.cumulative_average && !batches.defined())
         fail(ErrorKind::InvalidArgument, "{}: momentum None (a cumulative average) needs num_batches_tracked in training (x {})", name, s);
       require_range(c.attributes.eps, 0.0, HUGE_VAL, x, name, "eps");
       if (c.attributes.training && g.count() == 1)
         fail(ErrorKind::InvalidArgument, "{}: training needs more than one value per channel; x {} has {}", name, s, g.count());
       detail::shader_u32(s.numel(), "element count of x", name);
       return std::vector<OutputSpec>{{s}, {Shape{2, g.C}, DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<BatchNormAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &x = c.inputs[0], &running_mean = c.inputs[3], &running_var = c.inputs[4], &batches = c.inputs[5];
                  const Matrix &y = out[0], &stat = out[1];
                  const bool counted = c.attributes.training && batches.defined();
                  const BatchNormGeometry g = batch_norm_geometry(x.shape());
                  // An empty batch (N = 0), as PyTorch: an empty y and the running statistics kept;
                  // only the batch count, when given, is incremented (the stats kernel out of training).
                  const bool empty = g.N == 0, training = c.attributes.training && !empty;
                  if (empty && !counted) return;
                  std::shared_ptr<Storage> s1, s2;
                  if (training) {
                    s1 = c.engine.allocate(bytes_of(g.C));
                    s2 = c.engine.allocate(bytes_of(g.C));
                    batch_norm_moments(0, g, x, nullptr, s1, ds);
                    batch_norm_moments(1, g, x, s1, s2, ds);
                  }
                  const auto stats_access = training ? runtime::Access::ReadWrite : runtime::Access::Read;
                  const double count = static_cast<double>(g.count());
                  ComputeDispatch d;
                  d.kernel = kernels::ml_nn_batch_norm_stats;
                  d.specialization = {training, counted, counted && c.attributes.cumulative_average};
                  d.bindings = {BufferBinding::read(training ? s1 : running_mean.storage()),
                                BufferBinding::read(training ? s2 : running_var.storage()),
                                BufferBinding{running_mean.storage(), stats_access},
                                BufferBinding{running_var.storage(), stats_access},
                                BufferBinding::write(stat.storage()),
                                BufferBinding::read(training ? x.storage() : running_mean.storage()),
                                counted ? BufferBinding::read_write(batches.storage()) : BufferBinding::read(running_mean.storage())};
                  d.push.set(push::ml_nn_batch_norm_stats{.C = static_cast<std::uint32_t>(g.C),
                                                          .S = static_cast<std::uint32_t>(g.S),
                                                          .inv_m = static_cast<float>(empty ? 0.0 : 1.0 / count),
                                                          .unbias = static_cast<float>(count > 1 ? count / (count - 1) : 1.0),
                                                          .eps = static_cast<float>(c.attributes.eps),
                                                          .momentum = static_cast<float>(c.attributes.momentum)});
                  d.groups = {1, 1, 1};
                  ds.push_back(std::move(d));
                  if (empty) return;
                  ds.push_back(batch_norm_pass(Normalize, training, g, x, c.inputs[1], c.inputs[2], nullptr, stat.storage(), nullptr,
                                               nullptr, y.storage()));
                }}},
     .saves = [](const OpCall<BatchNormAttributes>&, const std::vector<bool>&) {
       return Saves{{true, true, false, false, false, false}, {false, true}};
     },
     // dx, dweight, dbias (each undefined unless needed) as one backward op.
     .backward = [](const BackwardCall<BatchNormAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &x = c.inputs[0], &weight = c.inputs[1], &stat = c.outputs[1];
       const bool training = c.attributes.training;
       const Engine& engine = x.engine();
       const BatchNormGeometry g = batch_norm_geometry(x.shape());
       const bool need_x = c.needs[0], need_w = c.needs[1], need_b = c.needs[2];
       std::vector<ComputeDispatch> ds;
       Matrix dx, dw, db;
       if (g.N == 0) {  // an empty batch: zero weight and bias gradients, no dispatch
         if (need_x) dx = detail::allocate(engine, x.shape());
         if (need_w) dw = detail::zeros(engine, Shape{g.C});
         if (need_b) db = detail::zeros(engine, Shape{g.C});
         c.record({}, {&gy, &x, &stat}, {&dx, &dw, &db}, {{"training", training}});
         return std::vector<Matrix>{dx, dw, db, Matrix(), Matrix(), Matrix()};
       }
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
         ds.push_back(batch_norm_pass(training ? DxBatch : DxRunning, training, g, x, weight, Matrix(), gy.storage(), stat.storage(),
                                      sdy, sdyxhat, dx.storage()));
       }
       c.record(ds, {&gy, &x, &stat}, {&dx, &dw, &db}, {{"training", training}});
       return std::vector<Matrix>{dx, dw, db, Matrix(), Matrix(), Matrix()};
     },
     .writes = [](const OpCall<BatchNormAttributes>& c) {
       return c.attributes.training ? std::vector<bool>{false, false, false, true, true, true} : std::vector<bool>{};
     }}};

}  // namespace

Matrix batch_norm_2d(const Matrix& x, const Matrix& weight, const Matrix& bias, const Matrix& running_mean,
                     const Matrix& running_var, bool training, std::optional<double> momentum, double eps,
                     const Matrix& num_batches_tracked) {
  return detail::apply(kBatchNorm, {x, weight, bias, running_mean, running_var, num_batches_tracked},
                       {training, momentum.value_or(0.0), eps, !momentum})[0];
}

}  // namespace oa::ml
