#include "oa/ml/nn/attention.hpp"

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/indexing.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/ml/attention.hpp"
#include "oa/ml/functional.hpp"
#include "oa/ml/init.hpp"
#include "oa/ml/nn/activation.hpp"

namespace oa::ml::nn {

namespace {

constexpr const char* kMha = "oa::ml::nn::MultiHeadAttention";

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal, double dropout,
                                       bool bias, std::optional<Engine> engine, std::optional<std::int64_t> kdim,
                                       std::optional<std::int64_t> vdim)
    : embed_dim_(embed_dim),
      num_heads_(num_heads),
      kdim_(kdim.value_or(embed_dim)),
      vdim_(vdim.value_or(embed_dim)),
      causal_(causal),
      dropout_(dropout),
      masks_(generator.next_seed()) {
  if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0 || !(dropout >= 0 && dropout < 1) || kdim_ < 1 || vdim_ < 1)
    fail(ErrorKind::InvalidArgument,
         "{}: embed_dim {} must be >= 1 and divisible by num_heads {} (>= 1), dropout {} in [0, 1), kdim {} and vdim {} >= 1", kMha,
         embed_dim, num_heads, dropout, kdim_, vdim_);
  if (kdim_ == embed_dim && vdim_ == embed_dim) {
    qkv_ = register_module("qkv", std::make_shared<Linear>(embed_dim, 3 * embed_dim, generator, bias, engine));
  } else {  // torch's _reset_parameters for this form
    const std::array<std::pair<const char*, std::int64_t>, 3> parts{
        {{"q_proj_weight", embed_dim}, {"k_proj_weight", kdim_}, {"v_proj_weight", vdim_}}};
    for (std::size_t i = 0; i < parts.size(); ++i)
      proj_weights_[i] = register_parameter(parts[i].first,
                                            init::xavier_uniform(Shape{embed_dim, parts[i].second}, generator, 1.0, engine));
    if (bias) in_proj_bias_ = register_parameter("in_proj_bias", init::zeros(Shape{3 * embed_dim}, engine));
  }
  proj_ = register_module("proj", std::make_shared<Linear>(embed_dim, embed_dim, generator, bias, engine));
}

// name: an own parameter, so in_proj_bias or q_proj_weight, k_proj_weight, v_proj_weight.
bool MultiHeadAttention::rebind_parameter(const std::string& name, const Parameter& p) {
  (name == "in_proj_bias" ? in_proj_bias_ : proj_weights_[name[0] == 'q' ? 0 : name[0] == 'k' ? 1 : 2]) = p;
  return true;
}

Matrix MultiHeadAttention::forward(const Matrix& x) {
  if (!qkv_)
    fail(ErrorKind::InvalidArgument,
         "{}: forward(x) is self-attention, which needs kdim {} and vdim {} equal to embed_dim {}: call forward(query, key, value)", kMha,
         kdim_, vdim_, embed_dim_);
  detail::require_f32(x, kMha, "x");
  if (x.rank() != 3 || x.dim(2) != embed_dim_ || x.dim(0) < 1 || x.dim(1) < 1)
    fail(ErrorKind::InvalidArgument, "{}: x {} must be [B, S, {}] with B, S >= 1", kMha, x.shape(), embed_dim_);
  const std::int64_t batch = x.dim(0), seq = x.dim(1), heads = num_heads_;
  const QkvHeads qkv = split_qkv_heads(qkv_->forward(x.reshape({batch * seq, embed_dim_})), batch, seq, heads);
  const std::vector<std::int64_t> h{batch, heads, seq, embed_dim_ / heads};
  return proj_->forward(attend(qkv.q.reshape(h), qkv.k.reshape(h), qkv.v.reshape(h), Matrix())).reshape({batch, seq, embed_dim_});
}

namespace {

// torch's mask forms as an additive mask of `shape`: Bool (true = hidden)
// becomes -inf where true and 0 elsewhere, F32 is added as it is.
Matrix additive_mask(const Matrix& mask, const char* arg, const Shape& shape) {
  if (mask.dtype() != DType::Bool && mask.dtype() != DType::F32)
    fail(ErrorKind::InvalidArgument, "{}: {} must be bool (true = ignore) or f32 (added); found {} {}", kMha, arg, to_string(mask.dtype()),
         mask.shape());
  const Matrix m = mask.reshape(shape.to_vector());
  if (mask.dtype() != DType::Bool) return m;
  return matrix::masked_fill(Matrix::zeros(shape, mask.engine()), m, -std::numeric_limits<float>::infinity());
}

}  // namespace

Matrix MultiHeadAttention::forward(const Matrix& query, const Matrix& key, const Matrix& value, const Matrix& key_padding_mask,
                                   const Matrix& attn_mask) {
  return forward_masked(query, key, value, key_padding_mask, attn_mask, nullptr);
}

MultiHeadAttentionOutput MultiHeadAttention::forward_with_weights(const Matrix& query, const Matrix& key, const Matrix& value,
                                                                  const Matrix& key_padding_mask, const Matrix& attn_mask) {
  MultiHeadAttentionOutput r;
  r.output = forward_masked(query, key, value, key_padding_mask, attn_mask, &r.weights);
  return r;
}

Matrix MultiHeadAttention::forward_masked(const Matrix& query, const Matrix& key, const Matrix& value,
                                          const Matrix& key_padding_mask, const Matrix& attn_mask, Matrix* weights) {
  const std::array<std::tuple<const Matrix*, const char*, std::int64_t>, 3> args{
      {{&query, "query", embed_dim_}, {&key, "key", kdim_}, {&value, "value", vdim_}}};
  for (const auto& [m, arg, dim] : args) {
    detail::require_f32(*m, kMha, arg);
    const bool keys = m != &query;  // no keys (Sk = 0) attend to nothing: zeros before the output projection, as SDPA
    if (m->rank() != 3 || m->dim(2) != dim || m->dim(0) < 1 || m->dim(1) < (keys ? 0 : 1))
      fail(ErrorKind::InvalidArgument, "{}: {} {} must be [B, S, {}] with B >= 1 and S >= {}", kMha, arg, m->shape(), dim, keys ? 0 : 1);
  }
  const std::int64_t batch = query.dim(0), sq = query.dim(1), sk = key.dim(1), heads = num_heads_, dh = embed_dim_ / heads;
  if (key.dim(0) != batch || value.dim(0) != batch || value.dim(1) != sk)
    fail(ErrorKind::InvalidArgument, "{}: key {} and value {} must be [{}, Sk, {}] and [{}, Sk, {}] with one Sk for query {}", kMha,
         key.shape(), value.shape(), batch, kdim_, batch, vdim_, query.shape());
  Matrix mask;
  if (key_padding_mask.defined()) {
    if (!(key_padding_mask.shape() == Shape{batch, sk}))
      fail(ErrorKind::InvalidArgument, "{}: key_padding_mask {} must be [B, Sk] = [{}, {}]", kMha, key_padding_mask.shape(), batch, sk);
    mask = additive_mask(key_padding_mask, "key_padding_mask", Shape{batch, 1, 1, sk});
  }
  if (attn_mask.defined()) {
    const Shape& s = attn_mask.shape();
    if (!(s == Shape{sq, sk}) && !(s == Shape{batch * heads, sq, sk}))
      fail(ErrorKind::InvalidArgument, "{}: attn_mask {} must be [Sq, Sk] = [{}, {}] or [B * H, Sq, Sk] = [{}, {}, {}]", kMha, s, sq, sk,
           batch * heads, sq, sk);
    const Matrix m = additive_mask(attn_mask, "attn_mask", s.rank() == 2 ? Shape{1, 1, sq, sk} : Shape{batch, heads, sq, sk});
    mask = mask.defined() ? mask + m : m;
  }
  const Matrix& b = qkv_ ? qkv_->bias().value() : in_proj_bias_.value();
  // The projection of part (0: q, 1: k, 2: v) as heads [B, H, S, Dh]: the
  // part-th third of the fused weight, or its own weight, and of the bias.
  const auto project = [&](const Matrix& x, std::int64_t part) {
    const std::int64_t seq = x.dim(1);
    const Matrix w = qkv_ ? matrix::narrow(qkv_->weight().value(), 0, part * embed_dim_, embed_dim_)
                          : proj_weights_[static_cast<std::size_t>(part)].value();
    const Matrix y = linear(x.reshape({batch * seq, x.dim(2)}), w,
                            b.defined() ? matrix::narrow(b, 0, part * embed_dim_, embed_dim_) : Matrix());
    return split_heads(y, batch, seq, heads).reshape({batch, heads, seq, dh});
  };
  const Matrix o = attend(project(query, 0), project(key, 1), project(value, 2), mask, weights);
  return proj_->forward(o).reshape({batch, sq, embed_dim_});
}

Matrix MultiHeadAttention::forward_inputs(std::span<const Matrix> inputs) {
  if (inputs.size() == 1) return forward(inputs[0]);
  if (inputs.size() < 3 || inputs.size() > 5)
    fail(ErrorKind::InvalidArgument, "{}: forward takes x, or query, key, value[, key_padding_mask[, attn_mask]]; {} inputs were given",
         kMha, inputs.size());
  return forward(inputs[0], inputs[1], inputs[2], inputs.size() > 3 ? inputs[3] : Matrix(), inputs.size() > 4 ? inputs[4] : Matrix());
}

Matrix MultiHeadAttention::attend(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask, Matrix* weights) {
  const std::int64_t batch = q.dim(0), heads = q.dim(1), sq = q.dim(2), sk = k.dim(2), dh = q.dim(3);
  Matrix o;
  if (training() && dropout_ > 0 && sk > 0) {  // (no keys: no weights to drop)
    // Materialised probabilities, so that dropout acts on them; causal hiding
    // (bottom-right aligned) as an additive mask.
    Matrix full_mask = mask;
    if (causal_) {
      if (!causal_mask_.defined() || causal_mask_.dim(0) != sq || causal_mask_.dim(1) != sk) {
        std::vector<float> m(static_cast<std::size_t>(sq * sk), 0.0f);
        for (std::int64_t i = 0; i < sq; ++i)
          for (std::int64_t j = i + sk - sq + 1; j < sk; ++j)
            if (j >= 0) m[static_cast<std::size_t>(i * sk + j)] = -std::numeric_limits<float>::infinity();
        causal_mask_ = Matrix::from_vector(Shape{sq, sk}, m, q.engine());
      }
      full_mask = mask.defined() ? mask + causal_mask_ : causal_mask_;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const Matrix scores = bmm_nt(q.reshape({batch * heads, sq, dh}), k.reshape({batch * heads, sk, dh}));
    const Matrix p = softmax_scaled_masked(scores.reshape({batch, heads, sq, sk}), full_mask, scale);
    const Matrix dropped = ml::dropout(p.reshape({batch * heads, sq, sk}), dropout_, masks_.next_seed(), true);
    o = bmm(dropped, v.reshape({batch * heads, sk, dh}));
    if (weights) *weights = dropped.reshape({batch, heads, sq, sk});
  } else if (weights) {
    const AttentionWithWeights r = scaled_dot_product_attention_with_weights(q, k, v, mask, std::nullopt, causal_);
    o = r.output.reshape({batch * heads, sq, dh});
    *weights = r.weights.reshape({batch, heads, sq, sk});
  } else {
    o = scaled_dot_product_attention(q, k, v, mask, std::nullopt, causal_).reshape({batch * heads, sq, dh});
  }
  return merge_heads(o, batch, sq, heads);
}

TransformerBlock::TransformerBlock(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal,
                                   double dropout, std::optional<Engine> engine) {
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(embed_dim, 1e-5, true, true, engine));
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(embed_dim, num_heads, generator, causal, dropout, true, engine));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(embed_dim, 1e-5, true, true, engine));
  auto fc1 = std::make_shared<Linear>(embed_dim, 4 * embed_dim, generator, true, engine);
  auto fc2 = std::make_shared<Linear>(4 * embed_dim, embed_dim, generator, true, engine);
  mlp_ = register_module("mlp", std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{fc1, std::make_shared<GELU>(), fc2}));
}

Matrix TransformerBlock::forward(const Matrix& x) {
  const Matrix h = x + attn_->forward(norm1_->forward(x));
  return h + mlp_->forward(norm2_->forward(h));
}

}  // namespace oa::ml::nn
