// scaled_dot_product_attention: its OpDef (matrix/op_def.hpp), whose `path`
// attribute picks the flash lowering (flash.cpp) or the materialised one
// (bmm_nt, masked softmax, bmm as one semantic op, with its backward from the
// saved weights); the entry points that choose the path, and the explicit
// backward functions.
#include "matrix/cast_lowering.hpp"
#include "ml/attention/internal.hpp"
#include "oa/matrix/cast.hpp"

namespace oa::ml {

thread_local SdpaBackend SdpaBackendGuard::sdpa_backend_ = SdpaBackend::Auto;

namespace {

using namespace attention_detail;
using runtime::ComputeDispatch;

constexpr const char* kFlash = "flash";
constexpr const char* kMaterialized = "materialized";

struct SdpaAttributes {
  float scale = 1.0f;  // resolved (1 / sqrt(Dh) when not given)
  bool causal = false;
  std::string path;  // kFlash or kMaterialized
  // Not traced: the materialised weights are returned to the caller, so
  // their gradient enters the backward.
  bool weights_grad = false;
  bool upper_left = false;  // causal aligned top-left (CausalVariant::UpperLeft)
  static constexpr auto fields = std::tuple{field("scale", &SdpaAttributes::scale), field("causal", &SdpaAttributes::causal),
                                            field("path", &SdpaAttributes::path),
                                            field("upper_left", &SdpaAttributes::upper_left)};
  bool flash() const { return path == kFlash; }
};

bool upper_left(CausalVariant v) { return v == CausalVariant::UpperLeft; }
CausalVariant variant_of(bool upper_left) { return upper_left ? CausalVariant::UpperLeft : CausalVariant::LowerRight; }

// [BH, Sq] or [B, H, Sq] for g, with a last extent when given.
Shape rows_shape(const AttentionGeometry& g, std::optional<std::int64_t> last = {}) {
  std::vector<std::int64_t> dims = g.four_d ? std::vector<std::int64_t>{g.batch, g.heads, g.sq} : std::vector<std::int64_t>{g.bh, g.sq};
  if (last) dims.push_back(*last);
  return Shape(dims);
}

AttentionGeometry geometry_of(std::span<const Matrix> inputs, const Matrix& mask, const SdpaAttributes& a) {
  return attention_geometry(kSdpa, inputs[0], inputs[1], inputs[2], mask, a.scale, a.causal, variant_of(a.upper_left));
}

// Flash: results output (q's dtype) and log-sum-exp (f32); auxiliary the
// softmax stats and, for a Bool mask, its additive form (what the backward
// reads). Materialised: results output (q's dtype) and the f32 weights
// (without gradient unless weights_grad).
std::vector<OutputSpec> sdpa_outputs(const OpCall<SdpaAttributes>& c) {
  const Matrix& mask = c.inputs[3];
  const AttentionGeometry g = geometry_of(c.inputs, mask, c.attributes);
  const DType dtype = c.inputs[0].dtype();
  if (c.attributes.flash()) {
    require_flash_dims(kSdpa, g);
    std::vector<OutputSpec> out{{rows_shape(g, g.dv), dtype}, {rows_shape(g)}, {rows_shape(g, 2), DType::F32, true}};
    if (mask.defined() && mask.dtype() == DType::Bool) out.push_back({mask.shape(), DType::F32, true});
    return out;
  }
  detail::shader_u32(checked_mul(g.bh * g.sq, g.sk, "attention score count"), "score count", kSdpa);
  return {{rows_shape(g, g.dv), dtype}, {rows_shape(g, g.sk), DType::F32, false, -1, !c.attributes.weights_grad}};
}

// `weights` (f32) as the left operand of a GEMM with 16-bit tensors of
// `dtype`: rounded to it by dispatches appended to ds (as torch's math path
// rounds the softmax); as they are for f32.
Matrix gemm_weights(const Matrix& weights, DType dtype, std::vector<ComputeDispatch>& ds) {
  if (dtype == DType::F32) return weights;
  Matrix low = detail::allocate(weights.engine(), weights.shape(), dtype);
  detail::cast_dispatches(weights, low, weights.numel(), ds);
  return low;
}

// The -inf of a fully masked row's log-sum-exp and softmax stats, as f32 bits.
constexpr std::uint32_t kMinusInfinity = 0xff800000u;

void lower_sdpa(const OpCall<SdpaAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
  const Matrix &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &given_mask = c.inputs[3];
  const AttentionGeometry g = geometry_of(c.inputs, given_mask, c.attributes);
  if (g.bh * g.sq == 0) return;  // no query rows: empty results, no dispatch
  if (g.sk == 0) {  // no keys: every row is fully masked (zero output; log-sum-exp and stats -inf; no weights)
    c.engine.fill(*out[0].storage(), 0, out[0].storage()->bytes(), 0);
    if (c.attributes.flash())
      for (const Matrix* m : {&out[1], &out[2]}) c.engine.fill(*m->storage(), 0, m->storage()->bytes(), kMinusInfinity);
    return;
  }
  if (c.attributes.flash()) {
    Matrix mask = given_mask;
    if (out.size() > 3) {
      lower_bool_mask(kSdpa, given_mask, out[3], ds);
      mask = out[3];
    }
    lower_flash_attention(c.engine, g, q, k, v, mask, out[0], out[1], out[2], ds);
    return;
  }
  ResolvedMask resolved = resolve_mask(kSdpa, "attn_mask", given_mask);
  const Matrix &mask = resolved.values, &weights = out[1];
  Matrix scores = detail::allocate(c.engine, weights.shape());
  SoftmaxRows rows;
  rows.rows = g.bh * g.sq;
  rows.cols = g.sk;
  rows.scale = g.scale;
  rows.mask_values = mask.defined() ? &mask : nullptr;
  rows.mask = g.mask;
  rows.causal = g.causal;
  rows.sq = g.sq;
  rows.diag = g.diag;
  append(ds, std::move(resolved.dispatches));
  append(ds, lower_bmm(c.engine, BmmLayout::NT, q, k, scores));
  append(ds, lower_softmax(c.engine, kSdpa, rows, scores, weights));
  const Matrix probs = gemm_weights(weights, q.dtype(), ds);
  append(ds, lower_bmm(c.engine, BmmLayout::NN, probs, v, out[0]));
}

// Flash: from the forward's output and stats. Materialised: dv = P^T g;
// dP = g v^T (+ the weights' gradient); dS = scale * P (dP - rowsum(P dP));
// dq = dS k; dk = dS^T q. The gradients have q's dtype; with 16-bit tensors
// dP and dS are f32 and P, dS are rounded to that dtype for their GEMMs.
std::vector<Matrix> sdpa_gradients(const BackwardCall<SdpaAttributes>& c) {
  const Matrix &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2];
  if (k.dim(-2) == 0 || q.numel() == 0) {  // no keys or no query rows: zero (or empty) gradients; no dispatch
    const Engine& engine = q.engine();
    const AttentionGradients r{c.needs[0] ? detail::zeros(engine, q.shape(), q.dtype()) : Matrix(),
                               c.needs[1] ? detail::zeros(engine, k.shape(), q.dtype()) : Matrix(),
                               c.needs[2] ? detail::zeros(engine, v.shape(), q.dtype()) : Matrix()};
    c.record({}, {&q, &k, &v, &c.grad_outputs[0]}, {&r.q, &r.k, &r.v}, detail::attribute_values(c.attributes));
    return {r.q, r.k, r.v, Matrix()};
  }
  const Matrix grad = matrix::cast(c.grad_outputs[0], q.dtype());
  // The gradient of the second result (log-sum-exp or weights); may be undefined.
  const Matrix second = c.grad_outputs.size() > 1 ? c.grad_outputs[1] : Matrix();
  const Engine& engine = grad.engine();
  std::vector<ComputeDispatch> ds;
  AttentionGradients r;
  if (c.attributes.flash()) {
    const Matrix &out = c.outputs[0], &stats = c.outputs[2];
    Matrix mask = c.outputs.size() > 3 ? c.outputs[3] : c.inputs[3];
    if (mask.defined() && mask.dtype() == DType::Bool) {  // an explicit backward: resolve it here
      ResolvedMask resolved = resolve_mask(kSdpa, "attn_mask", mask);
      mask = resolved.values;
      append(ds, std::move(resolved.dispatches));
    }
    r = lower_flash_attention_backward(engine, geometry_of(c.inputs, mask, c.attributes), q, k, v, mask, out, stats, grad, second, ds);
    c.record(ds, {&q, &k, &v, &mask, &out, &stats, &grad, &second}, {&r.q, &r.k, &r.v}, detail::attribute_values(c.attributes));
  } else {
    const Matrix& weights = c.outputs[1];
    const AttentionGeometry g = geometry_of(c.inputs, Matrix(), c.attributes);
    const DType dtype = q.dtype();
    r = {detail::allocate(engine, q.shape(), dtype), detail::allocate(engine, k.shape(), dtype),
         detail::allocate(engine, v.shape(), dtype)};
    Matrix d_weights = detail::allocate(engine, weights.shape());
    Matrix d_scores = detail::allocate(engine, weights.shape());
    if (second.defined()) engine.copy(*second.storage(), 0, *d_weights.storage(), 0, static_cast<std::uint64_t>(weights.numel()) * 4);
    const Matrix probs = gemm_weights(weights, dtype, ds);
    append(ds, lower_bmm(engine, BmmLayout::TN, probs, grad, r.v));
    append(ds, lower_bmm(engine, BmmLayout::NT, grad, v, d_weights, second.defined() ? 1.0f : 0.0f));
    append(ds, lower_softmax_backward(engine, kSdpa, g.bh * g.sq, g.sk, g.scale, weights, d_weights, d_scores));
    const Matrix d_scores_low = gemm_weights(d_scores, dtype, ds);
    append(ds, lower_bmm(engine, BmmLayout::NN, d_scores_low, k, r.q));
    append(ds, lower_bmm(engine, BmmLayout::TN, d_scores_low, q, r.k));
    c.record(ds, {&q, &k, &v, &weights, &grad, &second}, {&r.q, &r.k, &r.v},
             {{"scale", static_cast<double>(g.scale)}, {"path", std::string(kMaterialized)}});
  }
  return {c.needs[0] ? r.q : Matrix(), c.needs[1] ? r.k : Matrix(), c.needs[2] ? r.v : Matrix(), Matrix()};
}

// The mask is detached. Flash's backward reads q, k, v, the output, the
// stats and the mask (an F32 one as given, a Bool one resolved); the
// materialised one q, k, v and the weights.
const Op<SdpaAttributes> kSdpaOp{{.name = kSdpa,
                                  .inputs = {"q", "k", "v", {"additive_mask", true, true}},
                                  .outputs = 2,
                                  .infer = sdpa_outputs,
                                  .lower = {{DType::F32, lower_sdpa}, {DType::F16, lower_sdpa}, {DType::BF16, lower_sdpa}},
                                  .saves = [](const OpCall<SdpaAttributes>& c, const std::vector<bool>&) {
                                    const bool f32_mask = c.inputs[3].defined() && c.inputs[3].dtype() == DType::F32;
                                    return c.attributes.flash() ? Saves{{true, true, true, f32_mask}, {true, false, true, true}}
                                                                : Saves{{true, true, true, false}, {false, true}};
                                  },
                                  .backward = sdpa_gradients}};

}  // namespace

SdpaBackendGuard::SdpaBackendGuard(SdpaBackend backend) : previous_(sdpa_backend_) { sdpa_backend_ = backend; }
SdpaBackendGuard::~SdpaBackendGuard() { sdpa_backend_ = previous_; }
SdpaBackend SdpaBackendGuard::current() { return sdpa_backend_; }

FlashAttentionResult flash_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                     std::optional<float> scale, bool causal, CausalVariant causal_variant) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal, causal_variant);
  require_flash_dims(kSdpa, g);
  std::vector<Matrix> auxiliary;
  const auto r = detail::apply(kSdpaOp, {q, k, v, additive_mask}, {g.scale, causal, kFlash, false, upper_left(causal_variant)},
                               &auxiliary);
  return {r[0], r[1], auxiliary[0]};
}

Matrix flash_attention_causal(const Matrix& q, const Matrix& k, const Matrix& v, float scale) {
  return flash_attention(q, k, v, Matrix(), scale, true).output;
}

Matrix scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                    std::optional<float> scale, bool causal, SdpaBackend backend, CausalVariant causal_variant) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal, causal_variant);
  if (backend == SdpaBackend::Auto) backend = SdpaBackendGuard::current();
  if (backend == SdpaBackend::Auto)
    backend = g.dh <= kMaxFlashDim && g.dv <= kMaxFlashDim ? SdpaBackend::Flash : SdpaBackend::Math;
  if (backend == SdpaBackend::Flash) return flash_attention(q, k, v, additive_mask, g.scale, causal, causal_variant).output;
  return detail::apply(kSdpaOp, {q, k, v, additive_mask}, {g.scale, causal, kMaterialized, false, upper_left(causal_variant)})[0];
}

AttentionWithWeights scaled_dot_product_attention_with_weights(const Matrix& q, const Matrix& k, const Matrix& v,
                                                               const Matrix& additive_mask, std::optional<float> scale,
                                                               bool causal, CausalVariant causal_variant) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal, causal_variant);
  const auto r =
      detail::apply(kSdpaOp, {q, k, v, additive_mask}, {g.scale, causal, kMaterialized, true, upper_left(causal_variant)});
  return {r[0], r[1]};
}

AttentionGradients flash_attention_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                            const Matrix& output, const Matrix& softmax_stats, const Matrix& grad, float scale,
                                            bool causal, const Matrix& grad_log_sum_exp, CausalVariant causal_variant) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, additive_mask, scale, causal, causal_variant);
  require_flash_dims(kSdpa, g);
  const Shape lse_shape = rows_shape(g), stats_shape = rows_shape(g, 2), out_shape = rows_shape(g, g.dv);
  detail::require_same_dtype(q, "q", output, "output", kSdpa);
  detail::require_f32(softmax_stats, kSdpa, "softmax_stats");
  detail::require_same_dtype(q, "q", grad, "grad", kSdpa);
  detail::require_same_engine(q, "q", output, "output", kSdpa);
  detail::require_same_engine(q, "q", softmax_stats, "softmax_stats", kSdpa);
  detail::require_same_engine(q, "q", grad, "grad", kSdpa);
  if (grad_log_sum_exp.defined()) {
    detail::require_f32(grad_log_sum_exp, kSdpa, "grad_log_sum_exp");
    detail::require_same_engine(q, "q", grad_log_sum_exp, "grad_log_sum_exp", kSdpa);
  }
  if (!(output.shape() == out_shape) || !(grad.shape() == out_shape) || !(softmax_stats.shape() == stats_shape) ||
      (grad_log_sum_exp.defined() && !(grad_log_sum_exp.shape() == lse_shape)))
    fail(ErrorKind::InvalidArgument,
         "{} backward: output {} and grad {} must be {}, softmax_stats {} must be {} and grad_log_sum_exp {}", kSdpa,
         output.shape(), grad.shape(), out_shape, softmax_stats.shape(), stats_shape, lse_shape);
  const auto d = detail::apply_backward(kSdpaOp, {q, k, v, additive_mask}, {output, Matrix(), softmax_stats}, {grad, grad_log_sum_exp},
                                        {true, true, true, false}, {g.scale, causal, kFlash, false, upper_left(causal_variant)});
  return {d[0], d[1], d[2]};
}

AttentionGradients attention_weights_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& weights,
                                              const Matrix& grad, float scale, const Matrix& grad_weights) {
  const AttentionGeometry g = attention_geometry(kSdpa, q, k, v, Matrix(), scale, false, CausalVariant::LowerRight);
  const Shape weights_shape = rows_shape(g, g.sk), out_shape = rows_shape(g, g.dv);
  detail::require_f32(weights, kSdpa, "weights");
  detail::require_same_dtype(q, "q", grad, "grad", kSdpa);
  detail::require_same_engine(q, "q", weights, "weights", kSdpa);
  detail::require_same_engine(q, "q", grad, "grad", kSdpa);
  if (grad_weights.defined()) {
    detail::require_f32(grad_weights, kSdpa, "grad_weights");
    detail::require_same_engine(q, "q", grad_weights, "grad_weights", kSdpa);
  }
  if (!(weights.shape() == weights_shape) || !(grad.shape() == out_shape) ||
      (grad_weights.defined() && !(grad_weights.shape() == weights_shape)))
    fail(ErrorKind::InvalidArgument,
         "{} backward: weights {} (and grad_weights) must be {} and grad {} must be {}", kSdpa,
         weights.shape(), weights_shape, grad.shape(), out_shape);
  detail::shader_u32(weights.numel(), "score count", kSdpa);
  const auto d = detail::apply_backward(kSdpaOp, {q, k, v, Matrix()}, {Matrix(), weights}, {grad, grad_weights},
                                        {true, true, true, false}, {g.scale, false, kMaterialized});
  return {d[0], d[1], d[2]};
}

}  // namespace oa::ml
