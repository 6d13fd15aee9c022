// softmax_scaled_masked: validation, the row-softmax forward and backward
// lowerings (also used by the materialised attention path), and its autograd
// rule (the mask is detached).
#include <algorithm>

#include "ml/attention/internal.hpp"

namespace oa::ml {

namespace attention_detail {

namespace {

using runtime::BufferBinding;
using runtime::ComputeDispatch;

// Invocations cooperating on one row: 8 (short rows, 32 rows per workgroup),
// 64, or the whole workgroup of 256 for rows past 512 columns.
std::uint32_t row_lanes(std::int64_t cols) { return cols <= 64 ? 8u : cols <= 512 ? 64u : 256u; }

// Rows per dispatch such that a [rows, cols] binding fits the device's
// maxStorageBufferRange; chunks start at multiples of 64 rows (256-byte
// aligned offsets).
std::int64_t rows_per_chunk(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols) {
  const auto range = static_cast<std::int64_t>(std::min<std::uint64_t>(engine.device().max_storage_buffer_range, INT64_MAX));
  const std::int64_t row_bytes = cols * 4;
  if (rows * row_bytes <= range) return rows;
  const std::int64_t per = range / row_bytes / 64 * 64;
  if (per == 0)
    fail(ErrorKind::ResourceExhausted, "{}: a row of {} columns exceeds 1/64 of this device's maxStorageBufferRange ({} bytes)", op,
         cols, range);
  return per;
}

}  // namespace

std::vector<ComputeDispatch> lower_softmax(const Engine& engine, const char* op, const SoftmaxRows& r, const Matrix& x,
                                           const Matrix& y) {
  const std::int64_t per = rows_per_chunk(engine, op, r.rows, r.cols);
  if (r.mask.present && static_cast<std::uint64_t>(r.mask_values->numel()) * 4 > engine.device().max_storage_buffer_range)
    fail(ErrorKind::ResourceExhausted, "{}: mask {} exceeds this device's maxStorageBufferRange ({} bytes)", op,
         r.mask_values->shape(), engine.device().max_storage_buffer_range);
  const std::uint32_t lanes = row_lanes(r.cols);
  const auto row_bytes = static_cast<std::uint64_t>(r.cols) * 4;
  std::vector<ComputeDispatch> out;
  for (std::int64_t r0 = 0; r0 < r.rows; r0 += per) {
    const std::int64_t n = std::min(per, r.rows - r0);
    const std::uint64_t off = static_cast<std::uint64_t>(r0) * row_bytes, bytes = static_cast<std::uint64_t>(n) * row_bytes;
    ComputeDispatch d;
    d.kernel = "ml/attention/softmax_forward";
    d.specialization = {lanes};
    BufferBinding mask =
        r.mask.present ? BufferBinding::read(r.mask_values->storage()) : BufferBinding::read(x.storage(), off, bytes);
    d.bindings = {BufferBinding::read(x.storage(), off, bytes), std::move(mask), BufferBinding::write(y.storage(), off, bytes)};
    d.push.u32(static_cast<std::uint32_t>(n))
        .u32(static_cast<std::uint32_t>(r.cols))
        .f32(r.scale)
        .u32(r.mask.present ? 1u : 0u)
        .u32(static_cast<std::uint32_t>(r0))
        .u32(r.causal ? 1u : 0u)
        .u32(static_cast<std::uint32_t>(std::max<std::int64_t>(r.sq, 1)))
        .u32(static_cast<std::uint32_t>(r.cols))
        .u32(static_cast<std::uint32_t>(r.mask.heads))
        .u32(static_cast<std::uint32_t>(r.mask.sb))
        .u32(static_cast<std::uint32_t>(r.mask.sh))
        .u32(static_cast<std::uint32_t>(r.mask.sq));
    d.groups = {detail::groups_for(n, 256 / lanes), 1, 1};
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ComputeDispatch> lower_softmax_backward(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols,
                                                    float scale, const Matrix& y, const Matrix& dy, const Matrix& dx) {
  const std::int64_t per = rows_per_chunk(engine, op, rows, cols);
  const std::uint32_t lanes = row_lanes(cols);
  const auto row_bytes = static_cast<std::uint64_t>(cols) * 4;
  std::vector<ComputeDispatch> out;
  for (std::int64_t r0 = 0; r0 < rows; r0 += per) {
    const std::int64_t n = std::min(per, rows - r0);
    const std::uint64_t off = static_cast<std::uint64_t>(r0) * row_bytes, bytes = static_cast<std::uint64_t>(n) * row_bytes;
    ComputeDispatch d;
    d.kernel = "ml/attention/softmax_backward";
    d.specialization = {lanes};
    d.bindings = {BufferBinding::read(y.storage(), off, bytes), BufferBinding::read(dy.storage(), off, bytes),
                  BufferBinding::write(dx.storage(), off, bytes)};
    d.push.u32(static_cast<std::uint32_t>(n)).u32(static_cast<std::uint32_t>(cols)).f32(scale);
    d.groups = {detail::groups_for(n, 256 / lanes), 1, 1};
    out.push_back(std::move(d));
  }
  return out;
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
