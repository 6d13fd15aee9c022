// scaled_dot_product_attention (choosing the flash or the materialised path),
// the materialised path (bmm_nt, masked softmax, bmm as one semantic op), its
// backward from the saved weights, and its autograd rule.
#include "ml/attention/internal.hpp"

namespace oa::ml {

thread_local SdpaBackend SdpaBackendGuard::sdpa_backend_ = SdpaBackend::Auto;

namespace {

using namespace attention_detail;
using runtime::ComputeDispatch;

AttentionGradients weights_backward(const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                                    const Matrix& weights, const Matrix& grad, const Matrix& grad_weights);

// The materialised forward; `weights_output` when the weights are returned to
// the caller (their gradient then enters the backward).
AttentionWithWeights materialised(const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                                  const Matrix& given_mask, bool weights_output) {
  detail::shader_u32(checked_mul(g.bh * g.sq, g.sk, "attention score count"), "score count", kSdpa);
  const Engine& engine = q.engine();
  ResolvedMask resolved = resolve_mask(kSdpa, "additive_mask", given_mask);
  const Matrix& mask = resolved.values;
  std::vector<std::int64_t> dims = g.four_d ? std::vector<std::int64_t>{g.batch, g.heads, g.sq, g.sk}
                                            : std::vector<std::int64_t>{g.bh, g.sq, g.sk};
  Matrix scores = detail::allocate(engine, Shape(dims));
  dims.back() = g.dv;
  AttentionWithWeights r{detail::allocate(engine, Shape(dims)), detail::allocate(engine, scores.shape())};
  SoftmaxRows rows;
  rows.rows = g.bh * g.sq;
  rows.cols = g.sk;
  rows.scale = g.scale;
  rows.mask_values = mask.defined() ? &mask : nullptr;
  rows.mask = g.mask;
  rows.causal = g.causal;
  rows.sq = g.sq;
  std::vector<ComputeDispatch> dispatches = std::move(resolved.dispatches);
  append(dispatches, lower_bmm(engine, BmmLayout::NT, q, k, scores));
  append(dispatches, lower_softmax(engine, kSdpa, rows, scores, r.weights));
  append(dispatches, lower_bmm(engine, BmmLayout::NN, r.weights, v, r.output));
  SemanticOp op = detail::semantic(kSdpa, {&q, &k, &v}, {&r.output, &r.weights}, sdpa_attributes(g.scale, g.causal, "materialized"));
  if (mask.defined()) op.inputs.push_back(mask.shape());
  engine.record(std::move(op), dispatches);
  if (autograd::needs_record({&q, &k, &v})) {  // the mask is detached
    using autograd::SavedValue;
    autograd::record(kSdpa, {q, k, v}, weights_output ? std::vector<Matrix>{r.output, r.weights} : std::vector<Matrix>{r.output},
                     [g, sq = SavedValue(q), sk = SavedValue(k), sv = SavedValue(v), sw = SavedValue(r.weights)](
                         const std::vector<Matrix>& gy, const std::vector<bool>& needs) {
                       AttentionGradients d = weights_backward(g, sq.get(), sk.get(), sv.get(), sw.get(), gy[0],
                                                               gy.size() > 1 ? gy[1] : Matrix());
                       return std::vector<Matrix>{needs[0] ? d.q : Matrix(), needs[1] ? d.k : Matrix(), needs[2] ? d.v : Matrix()};
                     });
  }
  return r;
}

// dv = P^T g; dP = g v^T (+ grad_weights); dS = scale * P (dP - rowsum(P dP));
// dq = dS k; dk = dS^T q. grad_weights may be undefined.
AttentionGradients weights_backward(const AttentionGeometry& g, const Matrix& q, const Matrix& k, const Matrix& v,
                                    const Matrix& weights, const Matrix& grad, const Matrix& grad_weights) {
  const Engine& engine = q.engine();
  AttentionGradients r{detail::allocate(engine, q.shape()), detail::allocate(engine, k.shape()), detail::allocate(engine, v.shape())};
  Matrix d_weights = detail::allocate(engine, weights.shape());
  Matrix d_scores = detail::allocate(engine, weights.shape());
  if (grad_weights.defined()) engine.copy(*grad_weights.storage(), 0, *d_weights.storage(), 0, static_cast<std::uint64_t>(weights.numel()) * 4);
  std::vector<ComputeDispatch> dispatches = lower_bmm(engine, BmmLayout::TN, weights, grad, r.v);
  append(dispatches, lower_bmm(engine, BmmLayout::NT, grad, v, d_weights, grad_weights.defined() ? 1.0f : 0.0f));
  append(dispatches, lower_softmax_backward(engine, kSdpa, g.bh * g.sq, g.sk, g.scale, weights, d_weights, d_scores));
  append(dispatches, lower_bmm(engine, BmmLayout::NN, d_scores, k, r.q));
  append(dispatches, lower_bmm(engine, BmmLayout::TN, d_scores, q, r.k));
  SemanticOp op = detail::semantic(kSdpa, {&q, &k, &v, &weights, &grad}, {&r.q, &r.k, &r.v},
                                   {{"scale", static_cast<double>(g.scale)}, {"path", std::string("materialized")}}, true);
  if (grad_weights.defined()) op.inputs.push_back(grad_weights.shape());
  engine.record(std::move(op), dispatches);
  return r;
}

}  // namespace

SdpaBackendGuard::SdpaBackendGuard(SdpaBackend backend) : previous_(sdpa_backend_) { sdpa_backend_ = backend; }
SdpaBackendGuard::~SdpaBackendGuard() { sdpa_backend_ = previous_; }
SdpaBackend SdpaBackendGuard::current() { return sdpa_backend_; }

Matrix scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                    std::optional<float> scale, bool causal, SdpaBackend backend) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal);
  if (backend == SdpaBackend::Auto) backend = SdpaBackendGuard::current();
  if (backend == SdpaBackend::Auto)
    backend = g.dh <= kMaxFlashDim && g.dv <= kMaxFlashDim ? SdpaBackend::Flash : SdpaBackend::Math;
  if (backend == SdpaBackend::Flash) return flash_attention(q, k, v, additive_mask, g.scale, causal).output;
  return materialised(g, q, k, v, additive_mask, false).output;
}

AttentionWithWeights scaled_dot_product_attention_with_weights(const Matrix& q, const Matrix& k, const Matrix& v,
                                                               const Matrix& additive_mask, std::optional<float> scale,
                                                               bool causal) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal);
  return materialised(g, q, k, v, additive_mask, true);
}

AttentionGradients attention_weights_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& weights,
                                              const Matrix& grad, float scale, const Matrix& grad_weights) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, Matrix(), scale, false);
  std::vector<std::int64_t> dims = g.four_d ? std::vector<std::int64_t>{g.batch, g.heads, g.sq, g.sk}
                                            : std::vector<std::int64_t>{g.bh, g.sq, g.sk};
  const Shape weights_shape(dims);
  dims.back() = g.dv;
  const Shape out_shape(dims);
  detail::require_f32(weights, kSdpa, "weights");
  detail::require_f32(grad, kSdpa, "grad");
  detail::require_same_engine(q, weights, kSdpa);
  detail::require_same_engine(q, grad, kSdpa);
  if (grad_weights.defined()) {
    detail::require_f32(grad_weights, kSdpa, "grad_weights");
    detail::require_same_engine(q, grad_weights, kSdpa);
  }
  if (!(weights.shape() == weights_shape) || !(grad.shape() == out_shape) ||
      (grad_weights.defined() && !(grad_weights.shape() == weights_shape)))
    fail(ErrorKind::InvalidArgument,
         "{} backward: weights {} (and grad_weights) must be {} and grad {} must be {}", kSdpa,
         weights.shape(), weights_shape, grad.shape(), out_shape);
  detail::shader_u32(weights.numel(), "score count", kSdpa);
  return weights_backward(g, q, k, v, weights, grad, grad_weights);
}

}  // namespace oa::ml
