// cross_entropy, mse_loss and accuracy: validation, forward and backward
// lowerings, autograd rules.
#include <climits>
#include <limits>

#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kCrossEntropy = "oa::ml::cross_entropy";
constexpr const char* kMseLoss = "oa::ml::mse_loss";
constexpr const char* kAccuracy = "oa::ml::accuracy";

const bool kRegistered = [] {
  register_contract({kCrossEntropy,
                     2,
                     1,
                     {{"reduction", AttributeType::String}, {"ignore_index", AttributeType::Int}, {"label_smoothing", AttributeType::Float}}});
  register_contract({kMseLoss, 2, 1, {{"reduction", AttributeType::String}}});
  register_contract({kAccuracy, 2, 1, {}});
  return true;
}();

const char* to_string(Reduction r) { return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum"; }

// Validates logits [N, C] (nonzero extents) and targets i32 [N] for `name`.
void require_classification(const Matrix& logits, const Matrix& targets, const char* name) {
  detail::require_f32(logits, name, "logits");
  require_i32(targets, name, "targets");
  const Shape& s = logits.shape();
  if (s.rank() != 2 || s.numel() == 0)
    fail(ErrorKind::InvalidArgument, "{}: logits must be [N, C] with nonzero extents; found {} (targets {})", name, s, targets.shape());
  if (!(targets.shape() == Shape{s[0]}))
    fail(ErrorKind::InvalidArgument, "{}: targets must have shape [{}] to match logits {}; found {}", name, s[0], s, targets.shape());
  detail::require_same_engine(logits, targets, name);
  if (s[1] > INT32_MAX) fail(ErrorKind::InvalidArgument, "{}: logits {} have more classes than i32 targets address", name, s);
  detail::shader_u32(s.numel(), "element count of logits", name);
}

// ── cross_entropy ───────────────────────────────────────────────────────────

// dlogits, recorded as "oa::ml::cross_entropy backward".
Matrix cross_entropy_backward(const Matrix& gy, const Matrix& logits, const Matrix& targets, const Matrix& stat, const Matrix& sums,
                              const CrossEntropyOptions& o) {
  const Engine& engine = logits.engine();
  Matrix dx = detail::allocate(engine, logits.shape());
  ComputeDispatch d;
  d.kernel = "ml/nn/cross_entropy_backward";
  d.specialization = {static_cast<std::uint32_t>(o.reduction == Reduction::None ? 0 : o.reduction == Reduction::Mean ? 1 : 2)};
  d.bindings = {BufferBinding::read(logits.storage()),
                BufferBinding::read(targets.storage()),
                BufferBinding::read(stat.storage()),
                BufferBinding::read(gy.storage()),
                BufferBinding::read(sums.defined() ? sums.storage() : stat.storage()),
                BufferBinding::write(dx.storage())};
  d.push.u32(static_cast<std::uint32_t>(dx.numel())).u32(static_cast<std::uint32_t>(logits.shape()[1]));
  d.push.i32(static_cast<std::int32_t>(o.ignore_index)).f32(static_cast<float>(o.label_smoothing));
  d.groups = {detail::groups_for(dx.numel(), 256), 1, 1};
  engine.record(detail::semantic(kCrossEntropy, {&gy, &logits, &targets}, {&dx}, {}, true), {&d, 1});
  return dx;
}

}  // namespace

Matrix cross_entropy(const Matrix& logits, const Matrix& targets, const CrossEntropyOptions& options) {
  require_classification(logits, targets, kCrossEntropy);
  require_range(options.label_smoothing, 0.0, 1.0, logits, kCrossEntropy, "label_smoothing");
  if (options.ignore_index < INT32_MIN || options.ignore_index > INT32_MAX)
    fail(ErrorKind::InvalidArgument, "{}: ignore_index {} is outside the i32 range of targets (logits {})", kCrossEntropy,
         options.ignore_index, logits.shape());
  const Engine& engine = logits.engine();
  const std::int64_t N = logits.shape()[0], C = logits.shape()[1];
  const bool reduced = options.reduction != Reduction::None;
  Matrix loss = detail::allocate(engine, reduced ? Shape{} : Shape{N});
  Matrix stat = detail::allocate(engine, Shape{N, 2});  // per row: maximum, log(sum(exp(x - maximum)))
  Matrix sums = reduced ? detail::allocate(engine, Shape{2}) : Matrix();  // [total loss, rows counted]
  const auto rows = reduced ? engine.allocate(bytes_of(2 * N)) : loss.storage();
  std::vector<ComputeDispatch> ds = detail::lower_rows(engine, kCrossEntropy, N, C, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/nn/cross_entropy";
    d.specialization.push_back(reduced);
    d.bindings = {c.window(logits.storage(), C, Access::Read), c.window(targets.storage(), 1, Access::Read),
                  c.window(stat.storage(), 2, Access::Write), c.window(rows, reduced ? 2 : 1, Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(C));
    d.push.i32(static_cast<std::int32_t>(options.ignore_index)).f32(static_cast<float>(options.label_smoothing));
  });
  if (reduced) {
    detail::sum_channels(engine, rows, N, 2, 1, sums.storage(), ds);
    ComputeDispatch f;
    f.kernel = "ml/nn/loss_finish";
    f.specialization = {options.reduction == Reduction::Mean};
    f.bindings = {BufferBinding::read(sums.storage()), BufferBinding::write(loss.storage())};
    ds.push_back(std::move(f));
  }
  engine.record(detail::semantic(kCrossEntropy, {&logits, &targets}, {&loss},
                                 {{"reduction", std::string(to_string(options.reduction))},
                                  {"ignore_index", options.ignore_index},
                                  {"label_smoothing", options.label_smoothing}}),
                ds);
  autograd::record(kCrossEntropy, {logits, targets}, {loss},
                   [slogits = autograd::SavedValue(logits), stargets = autograd::SavedValue(targets), sstat = autograd::SavedValue(stat),
                    ssums = autograd::SavedValue(sums), options](const std::vector<Matrix>& gy, const std::vector<bool>&) {
                     return std::vector<Matrix>{
                         cross_entropy_backward(gy[0], slogits.get(), stargets.get(), sstat.get(), ssums.get(), options), Matrix()};
                   });
  return loss;
}

// ── mse_loss ────────────────────────────────────────────────────────────────

namespace {

// One pass of ml/nn/mse over a's elements into `out`.
ComputeDispatch mse_pass(std::uint32_t mode, bool reduced, const Matrix& a, const Matrix& b, const std::shared_ptr<Storage>& dy,
                         float scale, const std::shared_ptr<Storage>& out) {
  ComputeDispatch d;
  d.kernel = "ml/nn/mse";
  d.specialization = {mode, reduced};
  d.bindings = {BufferBinding::read(a.storage()), BufferBinding::read(b.storage()), BufferBinding::read(dy ? dy : a.storage()),
                BufferBinding::write(out)};
  d.push.u32(static_cast<std::uint32_t>(a.numel())).f32(scale);
  d.groups = {detail::groups_for(a.numel(), 256), 1, 1};
  return d;
}

// dinput and dtarget (as needed), recorded as "oa::ml::mse_loss backward".
std::vector<Matrix> mse_loss_backward(const Matrix& gy, const Matrix& a, const Matrix& b, Reduction reduction,
                                      const std::vector<bool>& needs) {
  const Engine& engine = a.engine();
  const bool reduced = reduction != Reduction::None;
  const float scale = reduction == Reduction::Mean ? static_cast<float>(1.0 / static_cast<double>(a.numel())) : 1.0f;
  std::vector<Matrix> grads(2);
  std::vector<ComputeDispatch> ds;
  SemanticOp op = detail::semantic(kMseLoss, {&gy, &a, &b}, {}, {}, true);
  for (int i = 0; i < 2; ++i) {
    if (!needs[i]) continue;
    grads[i] = detail::allocate(engine, a.shape());
    ds.push_back(mse_pass(1, reduced, a, b, gy.storage(), i == 0 ? scale : -scale, grads[i].storage()));
    op.outputs.push_back(a.shape());
  }
  engine.record(std::move(op), ds);
  return grads;
}

}  // namespace

Matrix mse_loss(const Matrix& input, const Matrix& target, Reduction reduction) {
  detail::require_f32(input, kMseLoss, "input");
  detail::require_f32(target, kMseLoss, "target");
  if (!(input.shape() == target.shape()) || input.numel() == 0)
    fail(ErrorKind::InvalidArgument, "{}: input {} and target {} must have the same nonempty shape", kMseLoss, input.shape(),
         target.shape());
  detail::require_same_engine(input, target, kMseLoss);
  detail::shader_u32(input.numel(), "element count of input", kMseLoss);
  const Engine& engine = input.engine();
  const bool reduced = reduction != Reduction::None;
  Matrix loss = detail::allocate(engine, reduced ? Shape{} : input.shape());
  std::vector<ComputeDispatch> ds;
  if (!reduced) {
    ds.push_back(mse_pass(0, false, input, target, nullptr, 1.0f, loss.storage()));
  } else {
    const auto squares = engine.allocate(bytes_of(input.numel()));
    ds.push_back(mse_pass(0, false, input, target, nullptr, 1.0f, squares));
    const float scale = reduction == Reduction::Mean ? static_cast<float>(1.0 / static_cast<double>(input.numel())) : 1.0f;
    detail::reduce_rows(engine, squares, 1, input.numel(), detail::RowReduction::Sum, scale, loss.storage(), ds);
  }
  engine.record(detail::semantic(kMseLoss, {&input, &target}, {&loss}, {{"reduction", std::string(to_string(reduction))}}), ds);
  autograd::record(kMseLoss, {input, target}, {loss},
                   [sa = autograd::SavedValue(input), sb = autograd::SavedValue(target), reduction](const std::vector<Matrix>& gy,
                                                                                                   const std::vector<bool>& needs) {
                     return mse_loss_backward(gy[0], sa.get(), sb.get(), reduction, needs);
                   });
  return loss;
}

// ── accuracy ────────────────────────────────────────────────────────────────

Matrix accuracy(const Matrix& logits, const Matrix& targets) {
  require_classification(logits, targets, kAccuracy);
  const Engine& engine = logits.engine();
  const std::int64_t N = logits.shape()[0], C = logits.shape()[1];
  Matrix y = detail::allocate(engine, Shape{});
  const auto argmax = engine.allocate(bytes_of(N)), hits = engine.allocate(bytes_of(N));
  std::vector<ComputeDispatch> ds;
  detail::reduce_rows(engine, logits.storage(), N, C, detail::RowReduction::ArgMax, 1.0f, argmax, ds);
  ComputeDispatch d;
  d.kernel = "ml/nn/accuracy";
  d.bindings = {BufferBinding::read(argmax), BufferBinding::read(targets.storage()), BufferBinding::write(hits)};
  d.push.u32(static_cast<std::uint32_t>(N));
  d.groups = {detail::groups_for(N, 256), 1, 1};
  ds.push_back(std::move(d));
  detail::reduce_rows(engine, hits, 1, N, detail::RowReduction::Sum, static_cast<float>(1.0 / static_cast<double>(N)), y.storage(), ds);
  engine.record(detail::semantic(kAccuracy, {&logits, &targets}, {&y}), ds);
  return y;
}

}  // namespace oa::ml
