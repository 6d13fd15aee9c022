// cross_entropy, mse_loss and accuracy, each declared once (matrix/op_def.hpp):
// validation, forward and backward lowerings.
#include <climits>
#include <limits>

#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

using namespace detail::op_def;

// A reduction as traced: "none", "mean" or "sum".
const char* to_string(Reduction r) { return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum"; }

// Validates logits [N, C] (C >= 1, and N >= 1 unless `empty_batch`) and
// targets i32 [N] for `name` (the logits' dtype is the op's lowering to check).
void require_classification(const Matrix& logits, const Matrix& targets, const char* name, bool empty_batch) {
  require_i32(targets, name, "targets");
  const Shape& s = logits.shape();
  if (s.rank() != 2 || s[1] == 0 || (s[0] == 0 && !empty_batch))
    fail(ErrorKind::InvalidArgument, "{}: logits must be [N, C] with C >= 1{}; found {} (targets {})", name, empty_batch ? "" : " and N >= 1",
         s, targets.shape());
  if (!(targets.shape() == Shape{s[0]}))
    fail(ErrorKind::InvalidArgument, "{}: targets must have shape [{}] to match logits {}; found {}", name, s[0], s, targets.shape());
  detail::require_same_engine(logits, "logits", targets, "targets", name);
  if (s[1] > INT32_MAX) fail(ErrorKind::InvalidArgument, "{}: logits {} have more classes than i32 targets address", name, s);
  detail::shader_u32(s.numel(), "element count of logits", name);
}

// ── cross_entropy ───────────────────────────────────────────────────────────

// Validates cross entropy's options for class-index targets.
void require_class_index_options(double label_smoothing, std::int64_t ignore_index, const Matrix& logits, const char* name) {
  require_range(label_smoothing, 0.0, 1.0, logits, name, "label_smoothing");
  if (ignore_index < INT32_MIN || ignore_index > INT32_MAX)
    fail(ErrorKind::InvalidArgument, "{}: ignore_index {} is outside the i32 range of targets (logits {})", name, ignore_index, logits.shape());
}


// Binds to `d` the device check of class targets outside [0, C) other than
// ignore_index (detail::bind_index_check) for logits [N, C]. The first
// dispatch to bind it (id 0) registers the check; later ones share its id.
void bind_target_check(const Engine& engine, ComputeDispatch& d, const char* op, const Shape& logits, std::int64_t ignore_index,
                       std::uint32_t& id) {
  if (id != 0) {
    d.bindings.push_back(BufferBinding::read_write(engine.device_check_record()));
    return;
  }
  const auto what = [logits, ignore_index] {
    return fmt::format("the classes of logits {} (ignore_index {} aside)", logits, ignore_index);
  };
  id = detail::bind_index_check(engine, d, op, what, logits[1]);
}

struct CrossEntropyAttributes {
  std::string reduction;  // to_string(Reduction)
  std::int64_t ignore_index = 0;
  double label_smoothing = 0;
  static constexpr auto fields = std::tuple{detail::field("reduction", &CrossEntropyAttributes::reduction),
                                            detail::field("ignore_index", &CrossEntropyAttributes::ignore_index),
                                            detail::field("label_smoothing", &CrossEntropyAttributes::label_smoothing)};
};

// The loss, and the auxiliary outputs that the backward reads: per row
// [maximum, log(sum(exp(x - maximum)))] [N, 2] and, when reduced, [total
// loss, rows counted] [2].
const detail::Op<CrossEntropyAttributes> kCrossEntropy{
    {.name = "oa::ml::cross_entropy",
     .inputs = {"logits", "targets"},
     .infer = [](const OpCall<CrossEntropyAttributes>& c) {
       const Matrix &logits = c.inputs[0], &targets = c.inputs[1];
       const CrossEntropyAttributes& a = c.attributes;
       require_classification(logits, targets, c.name, true);
       require_class_index_options(a.label_smoothing, a.ignore_index, logits, c.name);
       const std::int64_t N = logits.shape()[0];
       const bool reduced = a.reduction != "none";
       std::vector<OutputSpec> out{{reduced ? Shape{} : Shape{N}}, {Shape{N, 2}, DType::F32, true}};
       if (reduced) out.push_back({Shape{2}, DType::F32, true});
       return out;
     },
     .lower = {{DType::F32,
                [](const OpCall<CrossEntropyAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &logits = c.inputs[0], &targets = c.inputs[1], &loss = out[0], &stat = out[1];
                  const CrossEntropyAttributes& a = c.attributes;
                  const std::int64_t N = logits.shape()[0], C = logits.shape()[1];
                  const bool reduced = a.reduction != "none";
                  const auto rows = reduced ? c.engine.allocate(bytes_of(2 * N)) : loss.storage();
                  std::uint32_t check = 0;
                  const auto passes = detail::lower_rows(c.engine, c.name, N, C, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& r) {
                    d.kernel = kernels::ml_nn_cross_entropy;
                    detail::append_row_items(d, C, detail::RowCache::Slots);
                    d.specialization.push_back(reduced);
                    d.bindings = {r.window(logits.storage(), C, Access::Read), r.window(targets.storage(), 1, Access::Read),
                                  r.window(stat.storage(), 2, Access::Write), r.window(rows, reduced ? 2 : 1, Access::Write)};
                    bind_target_check(c.engine, d, c.name, logits.shape(), a.ignore_index, check);
                    d.push.set(push::ml_nn_cross_entropy{.R = static_cast<std::uint32_t>(r.count),
                                                         .L = static_cast<std::uint32_t>(C),
                                                         .ignore_index = static_cast<std::int32_t>(a.ignore_index),
                                                         .smoothing = static_cast<float>(a.label_smoothing),
                                                         .check_id = check});
                  });
                  ds.insert(ds.end(), passes.begin(), passes.end());
                  if (reduced) {
                    const Matrix& sums = out[2];
                    detail::sum_channels(c.engine, rows, N, 2, 1, sums.storage(), ds);
                    ComputeDispatch f;
                    f.kernel = kernels::ml_nn_loss_finish;
                    f.specialization = {a.reduction == "mean"};
                    f.bindings = {BufferBinding::read(sums.storage()), BufferBinding::write(loss.storage())};
                    ds.push_back(std::move(f));
                  }
                }}},
     .saves = [](const OpCall<CrossEntropyAttributes>&, const std::vector<bool>&) { return Saves{{true, true}, {false, true, true}}; },
     // dlogits; targets get none.
     .backward = [](const BackwardCall<CrossEntropyAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &logits = c.inputs[0], &targets = c.inputs[1], &stat = c.outputs[1];
       const CrossEntropyAttributes& a = c.attributes;
       const bool reduced = a.reduction != "none";
       Matrix dx = detail::allocate(logits.engine(), logits.shape());
       ComputeDispatch d;
       d.kernel = kernels::ml_nn_cross_entropy_backward;
       d.specialization = {static_cast<std::uint32_t>(!reduced ? 0 : a.reduction == "mean" ? 1 : 2)};
       d.bindings = {BufferBinding::read(logits.storage()),
                     BufferBinding::read(targets.storage()),
                     BufferBinding::read(stat.storage()),
                     BufferBinding::read(gy.storage()),
                     BufferBinding::read(reduced ? c.outputs[2].storage() : stat.storage()),
                     BufferBinding::write(dx.storage())};
       std::uint32_t check = 0;
       bind_target_check(logits.engine(), d, c.name, logits.shape(), a.ignore_index, check);
       d.push.set(push::ml_nn_cross_entropy_backward{.n = static_cast<std::uint32_t>(dx.numel()),
                                                     .C = static_cast<std::uint32_t>(logits.shape()[1]),
                                                     .ignore_index = static_cast<std::int32_t>(a.ignore_index),
                                                     .smoothing = static_cast<float>(a.label_smoothing),
                                                     .check_id = check});
       d.groups = {detail::groups_for(dx.numel(), 256), 1, 1};
       c.record({&d, 1}, {&gy, &logits, &targets}, {&dx});
       return std::vector<Matrix>{dx, Matrix()};
     }}};

// ── mse_loss ────────────────────────────────────────────────────────────────

struct MseLossAttributes {
  std::string reduction;  // to_string(Reduction)
  static constexpr auto fields = std::tuple{detail::field("reduction", &MseLossAttributes::reduction)};
  float scale(std::int64_t n) const { return reduction == "mean" ? static_cast<float>(1.0 / static_cast<double>(n)) : 1.0f; }
};

// A quiet NaN as f32 bits (the mean of no elements).
constexpr std::uint32_t kNaNBits = 0x7fc00000u;

// One pass of ml/nn/mse over a's elements into `out`.
ComputeDispatch mse_pass(std::uint32_t mode, bool reduced, const Matrix& a, const Matrix& b, const std::shared_ptr<Storage>& dy,
                         float scale, const std::shared_ptr<Storage>& out) {
  ComputeDispatch d;
  d.kernel = kernels::ml_nn_mse;
  d.specialization = {mode, reduced};
  d.bindings = {BufferBinding::read(a.storage()), BufferBinding::read(b.storage()), BufferBinding::read(dy ? dy : a.storage()),
                BufferBinding::write(out)};
  d.push.set(push::ml_nn_mse{.n = static_cast<std::uint32_t>(a.numel()), .scale = scale});
  d.groups = {detail::groups_for(a.numel(), 256), 1, 1};
  return d;
}

const detail::Op<MseLossAttributes> kMseLoss{
    {.name = "oa::ml::mse_loss",
     .inputs = {"input", "target"},
     .infer = [](const OpCall<MseLossAttributes>& c) {
       const Matrix &input = c.inputs[0], &target = c.inputs[1];
       detail::require_f32(target, c.name, "target");
       if (!(input.shape() == target.shape()))
         fail(ErrorKind::InvalidArgument, "{}: input {} and target {} must have the same shape", c.name, input.shape(), target.shape());
       detail::shader_u32(input.numel(), "element count of input", c.name);
       return std::vector<OutputSpec>{{c.attributes.reduction != "none" ? Shape{} : input.shape()}};
     },
     .lower = {{DType::F32,
                [](const OpCall<MseLossAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &input = c.inputs[0], &target = c.inputs[1], &loss = out[0];
                  if (input.numel() == 0) {  // no elements: mean NaN, sum 0, none empty, as PyTorch; no dispatch
                    if (c.attributes.reduction != "none")
                      c.engine.fill(*loss.storage(), 0, loss.storage()->bytes(), c.attributes.reduction == "mean" ? kNaNBits : 0u);
                    return;
                  }
                  if (c.attributes.reduction == "none") {
                    ds.push_back(mse_pass(0, false, input, target, nullptr, 1.0f, loss.storage()));
                    return;
                  }
                  const auto squares = c.engine.allocate(bytes_of(input.numel()));
                  ds.push_back(mse_pass(0, false, input, target, nullptr, 1.0f, squares));
                  detail::reduce_rows(c.engine, squares, 1, input.numel(), detail::RowReduction::Sum, c.attributes.scale(input.numel()),
                                      loss.storage(), ds);
                }}},
     .saves = [](const OpCall<MseLossAttributes>&, const std::vector<bool>&) { return Saves{{true, true}, {}}; },
     // dinput and dtarget, as needed.
     .backward = [](const BackwardCall<MseLossAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &a = c.inputs[0], &b = c.inputs[1];
       const bool reduced = c.attributes.reduction != "none";
       const float scale = c.attributes.scale(a.numel());
       std::vector<Matrix> grads(2);
       std::vector<ComputeDispatch> ds;
       for (int i = 0; i < 2; ++i) {
         if (!c.needs[i]) continue;
         grads[i] = detail::allocate(a.engine(), a.shape());
         if (a.numel() > 0) ds.push_back(mse_pass(1, reduced, a, b, gy.storage(), i == 0 ? scale : -scale, grads[i].storage()));
       }
       c.record(ds, {&gy, &a, &b}, {&grads[0], &grads[1]});
       return grads;
     }}};

// ── accuracy ────────────────────────────────────────────────────────────────

// The fraction of rows whose first maximal logit is the target: a scalar.
const detail::Op<NoAttributes> kAccuracy{
    {.name = "oa::ml::accuracy",
     .inputs = {"logits", "targets"},
     .infer = [](const OpCall<NoAttributes>& c) {
       require_classification(c.inputs[0], c.inputs[1], c.name, false);
       return std::vector<OutputSpec>{{Shape{}}};
     },
     .lower = {{DType::F32, [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &logits = c.inputs[0], &targets = c.inputs[1];
                  const std::int64_t N = logits.shape()[0], C = logits.shape()[1];
                  const auto argmax = c.engine.allocate(bytes_of(N)), hits = c.engine.allocate(bytes_of(N));
                  detail::reduce_rows(c.engine, logits.storage(), N, C, detail::RowReduction::ArgMax, 1.0f, argmax, ds);
                  ComputeDispatch d;
                  d.kernel = kernels::ml_nn_accuracy;
                  d.bindings = {BufferBinding::read(argmax), BufferBinding::read(targets.storage()), BufferBinding::write(hits)};
                  d.push.set(push::ml_nn_accuracy{.n = static_cast<std::uint32_t>(N)});
                  d.groups = {detail::groups_for(N, 256), 1, 1};
                  ds.push_back(std::move(d));
                  detail::reduce_rows(c.engine, hits, 1, N, detail::RowReduction::Sum, static_cast<float>(1.0 / static_cast<double>(N)),
                                      out[0].storage(), ds);
                }}}}};

}  // namespace

namespace {

// 16-bit logits as f32 (the loss runs in f32, as the op's autocast policy
// has it); others as they are (the op checks them).
Matrix widened(const Matrix& logits) {
  return logits.dtype() == DType::F16 || logits.dtype() == DType::BF16 ? matrix::cast(logits, DType::F32) : logits;
}

// logits [C] or [N, C, d1, ...] as rows [positions, C] (classes moved last).
Matrix class_rows(const Matrix& logits) {
  const auto r = static_cast<std::int64_t>(logits.rank());
  if (r == 1) return logits.reshape({1, logits.shape()[0]});
  if (r == 2) return logits;
  std::vector<std::int64_t> order{0};
  for (std::int64_t d = 2; d < r; ++d) order.push_back(d);
  order.push_back(1);
  return matrix::flatten(matrix::permute(logits, order), 0, static_cast<int>(r) - 2);
}

// The shape of a loss per position: logits' without the class axis.
Shape positions_shape(const Shape& logits) {
  std::vector<std::int64_t> dims = logits.to_vector();
  dims.erase(dims.begin() + (dims.size() == 1 ? 0 : 1));
  return Shape(dims);
}

// -sum_c q_c log_softmax(x)_c per position, q = (1 - s) p + s / C for class
// probabilities p of logits' shape, then reduced (Mean over positions).
Matrix cross_entropy_probabilities(const Matrix& logits, const Matrix& probabilities, const CrossEntropyOptions& o) {
  const char* op = "oa::ml::cross_entropy";
  detail::require_f32(probabilities, op, "targets");
  detail::require_same_engine(logits, "logits", probabilities, "targets", op);
  if (!(probabilities.shape() == logits.shape()))
    fail(ErrorKind::InvalidArgument, "{}: class probabilities (f32 targets) must have logits' shape {}; found {}", op, logits.shape(),
         probabilities.shape());
  require_range(o.label_smoothing, 0.0, 1.0, logits, op, "label_smoothing");
  const Matrix x = class_rows(widened(logits));
  Matrix q = class_rows(probabilities);
  if (o.label_smoothing > 0.0) {
    const auto s = static_cast<float>(o.label_smoothing);
    q = q * (1.0f - s) + s / static_cast<float>(x.shape()[1]);
  }
  const Matrix per_position = -matrix::sum(q * log_softmax(x), std::vector<int>{1});
  switch (o.reduction) {
    case Reduction::Mean: return matrix::mean_all(per_position);
    case Reduction::Sum: return matrix::sum_all(per_position);
    case Reduction::None: break;
  }
  return per_position.reshape(positions_shape(logits.shape()).to_vector());
}

}  // namespace

Matrix cross_entropy(const Matrix& logits, const Matrix& targets, const CrossEntropyOptions& options) {
  const char* op = "oa::ml::cross_entropy";
  detail::require_defined(logits, op, "logits");
  detail::require_defined(targets, op, "targets");
  // Checked here, before class_rows and widened record anything.
  if (!is_floating_point(logits.dtype()))
    fail(ErrorKind::InvalidArgument, "{}: logits must be f32, f16 or bf16; found {} {}", op, to_string(logits.dtype()), logits.shape());
  if (logits.rank() == 0)
    fail(ErrorKind::InvalidArgument, "{}: logits must be [C], [N, C] or [N, C, d1, ...]; found {} (targets {})", op, logits.shape(),
         targets.shape());
  if (is_floating_point(targets.dtype())) return cross_entropy_probabilities(logits, targets, options);
  if (logits.rank() == 2) {
    require_classification(logits, targets, op, true);
    require_class_index_options(options.label_smoothing, options.ignore_index, logits, op);
    return detail::apply(kCrossEntropy, {widened(logits), targets}, {to_string(options.reduction), options.ignore_index, options.label_smoothing})[0];
  }
  if (!(targets.shape() == positions_shape(logits.shape())))
    fail(ErrorKind::InvalidArgument, "{}: logits [C], [N, C] or [N, C, d1, ...] need class-index targets of shape [], [N] or [N, d1, ...]; "
         "found logits {} and targets {}", op, logits.shape(), targets.shape());
  require_i32(targets, op, "targets");
  detail::require_same_engine(logits, "logits", targets, "targets", op);
  require_class_index_options(options.label_smoothing, options.ignore_index, logits, op);
  if (logits.shape()[logits.rank() == 1 ? 0 : 1] == 0)
    fail(ErrorKind::InvalidArgument, "{}: logits {} have no classes (targets {})", op, logits.shape(), targets.shape());
  const Matrix loss = cross_entropy(class_rows(widened(logits)), targets.reshape({targets.numel()}), options);
  return options.reduction == Reduction::None ? loss.reshape(targets.shape().to_vector()) : loss;
}

Matrix mse_loss(const Matrix& input, const Matrix& target, Reduction reduction) {
  return detail::apply(kMseLoss, {input, target}, {to_string(reduction)})[0];
}

Matrix accuracy(const Matrix& logits, const Matrix& targets) { return detail::apply(kAccuracy, {logits, targets})[0]; }

}  // namespace oa::ml
