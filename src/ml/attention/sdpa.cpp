// scaled_dot_product_attention (choosing the flash or the materialised path),
// the materialised path (bmm_nt, masked softmax, bmm as one semantic op), its
// backward from the saved weights, and its autograd rule.
#include "ml/attention/internal.hpp"

namespace oa::ml {

namespace {

using namespace attention_detail;
using runtime::ComputeDispatch;

void append(std::vector<ComputeDispatch>& to, std::vector<ComputeDispatch> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

AttentionWithWeights materialised(const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                                  const Matrix& mask) {
  detail::shader_u32(checked_mul(g.bh * g.sq, g.sk, "attention score count"), "score count", kSdpa);
  const Engine& engine = q.engine();
  Matrix scores = detail::allocate(engine, Shape{g.bh, g.sq, g.sk});
  AttentionWithWeights r{detail::allocate(engine, Shape{g.bh, g.sq, g.dv}), detail::allocate(engine, scores.shape())};
  SoftmaxRows rows;
  rows.rows = g.bh * g.sq;
  rows.cols = g.sk;
  rows.scale = g.scale;
  rows.mask = mask.defined() ? &mask : nullptr;
  rows.mask_mode = g.mask_mode;
  rows.period = g.sq;
  rows.causal = g.causal;
  rows.sq = g.sq;
  std::vector<ComputeDispatch> dispatches = lower_bmm(engine, BmmLayout::NT, q, k, scores);
  append(dispatches, lower_softmax(engine, kSdpa, rows, scores, r.weights));
  append(dispatches, lower_bmm(engine, BmmLayout::NN, r.weights, v, r.output));
  SemanticOp op = detail::semantic(kSdpa, {&q, &k, &v}, {&r.output, &r.weights}, sdpa_attributes(g.scale, g.causal, "materialized"));
  if (mask.defined()) op.inputs.push_back(mask.shape());
  engine.record(std::move(op), dispatches);
  return r;
}

}  // namespace

Matrix scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                    std::optional<float> scale, bool causal) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal);
  if (g.dh <= kMaxFlashDim && g.dv <= kMaxFlashDim) return flash_attention(q, k, v, additive_mask, g.scale, causal).output;
  return scaled_dot_product_attention_with_weights(q, k, v, additive_mask, g.scale, causal).output;
}

AttentionWithWeights scaled_dot_product_attention_with_weights(const Matrix& q, const Matrix& k, const Matrix& v,
                                                               const Matrix& additive_mask, std::optional<float> scale,
                                                               bool causal) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal);
  return materialised(g, q, k, v, additive_mask);
}

AttentionGradients attention_weights_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& weights,
                                              const Matrix& grad, float scale) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, Matrix(), scale, false);
  const Shape weights_shape{g.bh, g.sq, g.sk}, out_shape{g.bh, g.sq, g.dv};
  detail::require_f32(weights, kSdpa, "weights");
  detail::require_f32(grad, kSdpa, "grad");
  detail::require_same_engine(q, weights, kSdpa);
  detail::require_same_engine(q, grad, kSdpa);
  if (!(weights.shape() == weights_shape) || !(grad.shape() == out_shape))
    fail(ErrorKind::InvalidArgument, "{} backward: weights {} must be [BH, Sq, Sk] = {} and grad {} must be [BH, Sq, Dv] = {}", kSdpa,
         weights.shape(), weights_shape, grad.shape(), out_shape);
  detail::shader_u32(weights.numel(), "score count", kSdpa);
  const Engine& engine = q.engine();
  AttentionGradients r{detail::allocate(engine, q.shape()), detail::allocate(engine, k.shape()), detail::allocate(engine, v.shape())};
  Matrix d_weights = detail::allocate(engine, weights_shape);
  Matrix d_scores = detail::allocate(engine, weights_shape);
  // dv = P^T g; dP = g v^T; dS = scale * P (dP - rowsum(P dP)); dq = dS k; dk = dS^T q.
  std::vector<ComputeDispatch> dispatches = lower_bmm(engine, BmmLayout::TN, weights, grad, r.v);
  append(dispatches, lower_bmm(engine, BmmLayout::NT, grad, v, d_weights));
  append(dispatches, lower_softmax_backward(engine, kSdpa, g.bh * g.sq, g.sk, g.scale, weights, d_weights, d_scores));
  append(dispatches, lower_bmm(engine, BmmLayout::NN, d_scores, k, r.q));
  append(dispatches, lower_bmm(engine, BmmLayout::TN, d_scores, q, r.k));
  engine.record(detail::semantic(kSdpa, {&q, &k, &v, &weights, &grad}, {&r.q, &r.k, &r.v},
                                 {{"scale", static_cast<double>(g.scale)}, {"path", std::string("materialized")}}, true),
                dispatches);
  return r;
}

}  // namespace oa::ml
