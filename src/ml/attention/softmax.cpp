// softmax_scaled_masked: the row-softmax forward and backward lowerings (also
// used by the materialised attention path) and its OpDef (matrix/op_def.hpp;
// the mask is detached).
#include <algorithm>

#include "matrix/float_lowering.hpp"
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
    d.kernel = kernels::ml_attention_softmax_forward;
    detail::append_row_items(d, r.cols, detail::RowCache::Slots);
    const BufferBinding xs = c.window(x.storage(), r.cols, runtime::Access::Read);
    d.bindings = {xs, r.mask.present ? BufferBinding::read(r.mask_values->storage()) : xs,
                  c.window(y.storage(), r.cols, runtime::Access::Write)};
    d.push.set(push::ml_attention_softmax_forward{.rows = static_cast<std::uint32_t>(c.count),
                                                  .cols = static_cast<std::uint32_t>(r.cols),
                                                  .scale = r.scale,
                                                  .masked = r.mask.present ? 1u : 0u,
                                                  .row_base = static_cast<std::uint32_t>(c.first),
                                                  .causal = r.causal ? 1u : 0u,
                                                  .diag = static_cast<std::int32_t>(r.diag),
                                                  .sq = static_cast<std::uint32_t>(std::max<std::int64_t>(r.sq, 1)),
                                                  .sk = static_cast<std::uint32_t>(r.cols),
                                                  .mask_heads = static_cast<std::uint32_t>(r.mask.heads),
                                                  .mask_sb = static_cast<std::uint32_t>(r.mask.sb),
                                                  .mask_sh = static_cast<std::uint32_t>(r.mask.sh),
                                                  .mask_sq = static_cast<std::uint32_t>(r.mask.sq)});
  });
}

std::vector<ComputeDispatch> lower_softmax_backward(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols,
                                                    float scale, const Matrix& y, const Matrix& dy, const Matrix& dx) {
  return detail::lower_rows(engine, op, rows, cols, detail::RowLanes::EightColumns, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = kernels::ml_attention_softmax_backward;
    d.bindings = {c.window(y.storage(), cols, runtime::Access::Read), c.window(dy.storage(), cols, runtime::Access::Read),
                  c.window(dx.storage(), cols, runtime::Access::Write)};
    d.push.set(push::ml_attention_softmax_backward{.rows = static_cast<std::uint32_t>(c.count),
                                                   .cols = static_cast<std::uint32_t>(cols),
                                                   .scale = scale});
  });
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;

struct SoftmaxAttributes {
  float scale = 1.0f;
  static constexpr auto fields = std::tuple{field("scale", &SoftmaxAttributes::scale)};
};

// apply() has checked scores' dtype (f32, f16 or bf16).
SoftmaxRows softmax_geometry(const Matrix& scores, const Matrix& mask, float scale) {
  if (scores.rank() < 1) fail(ErrorKind::InvalidArgument, "{}: scores must have rank >= 1; found {}", kSoftmax, scores.shape());
  SoftmaxRows r;
  r.rows = scores.shape().rows();
  r.cols = scores.shape().cols();
  r.scale = scale;
  if (mask.defined()) {
    detail::require_same_engine(scores, "scores", mask, "mask", kSoftmax);
    r.mask_values = &mask;
    // Scores [..., Sq, Sk] as [batch, heads, Sq, Sk]: heads is the axis before Sq (rank >= 4), batch the rest.
    const std::size_t rank = scores.rank();
    const std::int64_t sq = rank >= 2 ? scores.dim(-2) : 1;
    const std::int64_t heads = rank >= 4 ? scores.dim(-3) : 1;
    // batch from the leading extents, not rows / sq / heads (Sq or heads may be 0).
    std::int64_t batch = 1;
    for (std::size_t a = 0; a + (rank >= 4 ? 3 : 2) < rank; ++a) batch *= scores.shape()[a];
    r.sq = sq;
    if (mask.shape() == scores.shape()) {  // one mask row per score row
      require_mask_dtype(kSoftmax, "mask", mask);
      r.mask = MaskLayout{true, 1, sq * r.cols, 0, r.cols};
      detail::shader_u32(mask.numel(), "mask element count", kSoftmax);
    } else {
      r.mask = mask_layout(kSoftmax, "mask", mask, batch, heads, sq, r.cols, scores.shape());
    }
  }
  detail::shader_u32(r.rows, "row count", kSoftmax);
  detail::shader_u32(r.cols, "column count", kSoftmax);
  return r;
}

// y = softmax(scores * scale + mask) by rows; the mask is detached. The
// backward reads y.
const Op<SoftmaxAttributes> kSoftmaxOp{
    {.name = kSoftmax,
     .inputs = {"scores", {"mask", true, true}},
     .infer = [](const OpCall<SoftmaxAttributes>& c) {
       softmax_geometry(c.inputs[0], c.inputs[1], c.attributes.scale);
       return std::vector<OutputSpec>{{c.inputs[0].shape(), c.inputs[0].dtype()}};
     },
     .lower = detail::float_lowerings<SoftmaxAttributes>(
         [](const OpCall<SoftmaxAttributes>& c, const std::vector<Matrix>& out, std::vector<runtime::ComputeDispatch>& ds) {
           const Matrix &scores = c.inputs[0], &mask = c.inputs[1];
           SoftmaxRows r = softmax_geometry(scores, mask, c.attributes.scale);
           ResolvedMask resolved = resolve_mask(kSoftmax, "mask", mask);
           if (mask.defined()) r.mask_values = &resolved.values;
           append(ds, std::move(resolved.dispatches));
           append(ds, lower_softmax(c.engine, kSoftmax, r, scores, out[0]));
         }),
     .saves = [](const OpCall<SoftmaxAttributes>&, const std::vector<bool>&) { return Saves{{}, {true}}; },
     .backward = [](const BackwardCall<SoftmaxAttributes>& c) -> std::vector<Matrix> {
       const Matrix &y = c.outputs[0], &gy = c.grad_outputs[0];
       if (detail::is_half(gy.dtype())) return detail::widened_backward<SoftmaxAttributes>(c, kSoftmaxOp.def.backward);
       Matrix dx = detail::allocate(gy.engine(), y.shape());
       c.record(lower_softmax_backward(gy.engine(), kSoftmax, y.shape().rows(), y.shape().cols(), c.attributes.scale, y, gy, dx),
                {&y, &gy}, {&dx}, detail::attribute_values(c.attributes));
       return std::vector<Matrix>{dx, Matrix()};
     }}};

}  // namespace

Matrix softmax_scaled_masked(const Matrix& scores, const Matrix& mask, float scale) {
  return detail::apply(kSoftmaxOp, {scores, mask}, {scale})[0];
}

Matrix softmax_scaled_masked_backward(const Matrix& probabilities, const Matrix& grad, float scale) {
  detail::require_f32(probabilities, kSoftmax, "probabilities");
  detail::require_f32(grad, kSoftmax, "grad");
  detail::require_same_engine(probabilities, "probabilities", grad, "grad", kSoftmax);
  if (probabilities.rank() < 1 || !(grad.shape() == probabilities.shape()))
    fail(ErrorKind::InvalidArgument, "{} backward: grad {} must have the shape of probabilities {} (rank >= 1)",
         kSoftmax, grad.shape(), probabilities.shape());
  detail::shader_u32(probabilities.shape().rows(), "row count", kSoftmax);
  detail::shader_u32(probabilities.shape().cols(), "column count", kSoftmax);
  return detail::apply_backward(kSoftmaxOp, {Matrix(), Matrix()}, {probabilities}, {grad}, {true, false}, {scale})[0];
}

}  // namespace oa::ml
