// softmax_scaled_masked: validation, the row-softmax forward and backward
// lowerings (also used by the materialised attention path), and its autograd
// rule (the mask is detached).
#include <algorithm>

#include "ml/attention/internal.hpp"

namespace oa::ml {

namespace attention_detail {

using runtime::BufferBinding;
using runtime::ComputeDispatch;

std::vector<ComputeDispatch> lower_softmax(const Engine& engine, const char* op, const SoftmaxRows& r, const Matrix& x,
                                           const Matrix& y) {
  if (r.mask.present && static_cast<std::uint64_t>(r.mask_values->numel()) * 4 > engine.device().max_storage_buffer_range)
    fail(ErrorKind::ResourceExhausted, "{}: mask {} exceeds this device's maxStorageBufferRange ({} bytes)", op,
         r.mask_values->shape(), engine.device().max_storage_buffer_range);
  return detail::lower_rows(engine, op, r.rows, r.cols, detail::RowLanes::EightColumns, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/attention/softmax_forward";
    const BufferBinding xs = c.window(x.storage(), r.cols, runtime::Access::Read);
    d.bindings = {xs, r.mask.present ? BufferBinding::read(r.mask_values->storage()) : xs,
                  c.window(y.storage(), r.cols, runtime::Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count))
        .u32(static_cast<std::uint32_t>(r.cols))
        .f32(r.scale)
        .u32(r.mask.present ? 1u : 0u)
        .u32(static_cast<std::uint32_t>(c.first))
        .u32(r.causal ? 1u : 0u)
        .u32(static_cast<std::uint32_t>(std::max<std::int64_t>(r.sq, 1)))
        .u32(static_cast<std::uint32_t>(r.cols))
        .u32(static_cast<std::uint32_t>(r.mask.heads))
        .u32(static_cast<std::uint32_t>(r.mask.sb))
        .u32(static_cast<std::uint32_t>(r.mask.sh))
        .u32(static_cast<std::uint32_t>(r.mask.sq));
  });
}

std::vector<ComputeDispatch> lower_softmax_backward(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols,
                                                    float scale, const Matrix& y, const Matrix& dy, const Matrix& dx) {
  return detail::lower_rows(engine, op, rows, cols, detail::RowLanes::EightColumns, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/attention/softmax_backward";
    d.bindings = {c.window(y.storage(), cols, runtime::Access::Read), c.window(dy.storage(), cols, runtime::Access::Read),
                  c.window(dx.storage(), cols, runtime::Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(cols)).f32(scale);
  });
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;

const detail::ContractRegistration kSoftmaxContract{{kSoftmax, -1, 1, {{"scale", AttributeType::Float}}}};

SoftmaxRows softmax_geometry(const Matrix& scores, const Matrix& mask, float scale) {
  detail::require_f32(scores, kSoftmax, "scores");
  if (scores.rank() < 1 || scores.numel() < 1)
    fail(ErrorKind::InvalidArgument, "{}: scores must have rank >= 1 and no zero extent; found {}", kSoftmax, scores.shape());
  SoftmaxRows r;
  r.rows = scores.shape().rows();
  r.cols = scores.shape().cols();
  r.scale = scale;
  if (mask.defined()) {
    detail::require_same_engine(scores, mask, kSoftmax);
    r.mask_values = &mask;
    // Scores [..., Sq, Sk] as [batch, heads, Sq, Sk]: heads is the axis before Sq (rank >= 4), batch the rest.
    const std::size_t rank = scores.rank();
    const std::int64_t sq = rank >= 2 ? scores.dim(-2) : 1;
    const std::int64_t heads = rank >= 4 ? scores.dim(-3) : 1;
    r.sq = sq;
    if (mask.shape() == scores.shape()) {  // one mask row per score row
      require_mask_dtype(kSoftmax, "mask", mask);
      r.mask = MaskLayout{true, 1, sq * r.cols, 0, r.cols};
      detail::shader_u32(mask.numel(), "mask element count", kSoftmax);
    } else {
      r.mask = mask_layout(kSoftmax, "mask", mask, r.rows / sq / heads, heads, sq, r.cols, scores.shape());
    }
  }
  detail::shader_u32(r.rows, "row count", kSoftmax);
  detail::shader_u32(r.cols, "column count", kSoftmax);
  return r;
}

}  // namespace

Matrix softmax_scaled_masked(const Matrix& scores, const Matrix& mask, float scale) {
  SoftmaxRows r = softmax_geometry(scores, mask, scale);
  const Engine& engine = scores.engine();
  ResolvedMask resolved = resolve_mask(kSoftmax, "mask", mask);
  if (mask.defined()) r.mask_values = &resolved.values;
  Matrix y = detail::allocate(engine, scores.shape());
  std::vector<runtime::ComputeDispatch> dispatches = std::move(resolved.dispatches);
  append(dispatches, lower_softmax(engine, kSoftmax, r, scores, y));
  SemanticOp op = detail::semantic(kSoftmax, {&scores}, {&y}, {{"scale", static_cast<double>(scale)}});
  if (mask.defined()) op.inputs.push_back(mask.shape());
  engine.record(std::move(op), dispatches);
  if (autograd::needs_record({&scores})) {  // the mask is detached: scores is the rule's only input
    autograd::record(kSoftmax, {scores}, {y}, [saved = autograd::SavedValue(y), scale](const std::vector<Matrix>& gy, const std::vector<bool>&) {
      return std::vector<Matrix>{softmax_scaled_masked_backward(saved.get(), gy[0], scale)};
    });
  }
  return y;
}

Matrix softmax_scaled_masked_backward(const Matrix& probabilities, const Matrix& grad, float scale) {
  detail::require_f32(probabilities, kSoftmax, "probabilities");
  detail::require_f32(grad, kSoftmax, "grad");
  detail::require_same_engine(probabilities, grad, kSoftmax);
  if (probabilities.rank() < 1 || probabilities.numel() < 1 || !(grad.shape() == probabilities.shape()))
    fail(ErrorKind::InvalidArgument, "{} backward: grad {} must have the shape of probabilities {} (rank >= 1, no zero extent)",
         kSoftmax, grad.shape(), probabilities.shape());
  const std::int64_t rows = detail::shader_u32(probabilities.shape().rows(), "row count", kSoftmax);
  const std::int64_t cols = detail::shader_u32(probabilities.shape().cols(), "column count", kSoftmax);
  const Engine& engine = probabilities.engine();
  Matrix dx = detail::allocate(engine, probabilities.shape());
  auto dispatches = lower_softmax_backward(engine, kSoftmax, rows, cols, scale, probabilities, grad, dx);
  engine.record(detail::semantic(kSoftmax, {&probabilities, &grad}, {&dx}, {{"scale", static_cast<double>(scale)}}, true),
                dispatches);
  return dx;
}

}  // namespace oa::ml
