#include "oa/ml/nn/attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "oa/matrix/concat.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/ml/attention.hpp"
#include "oa/ml/nn/activation.hpp"
#include "oa/ml/functional.hpp"

namespace oa::ml::nn {

namespace {

constexpr const char* kMha = "oa::ml::nn::MultiHeadAttention";

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal,
                                       double dropout, std::optional<Engine> engine)
    : embed_dim_(embed_dim), num_heads_(num_heads), causal_(causal), dropout_(dropout), masks_(generator.next_seed()) {
  if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0 || !(dropout >= 0 && dropout < 1))
    fail(ErrorKind::InvalidArgument,
         "{}: embed_dim {} must be >= 1 and divisible by num_heads {} (>= 1), and dropout {} in [0, 1)", kMha, embed_dim,
         num_heads, dropout);
  qkv_ = register_module("qkv", std::make_shared<Linear>(embed_dim, 3 * embed_dim, generator, true, engine));
  proj_ = register_module("proj", std::make_shared<Linear>(embed_dim, embed_dim, generator, true, engine));
}

Matrix MultiHeadAttention::forward(const Matrix& x) {
  detail::require_f32(x, kMha, "x");
  if (x.rank() != 3 || x.dim(2) != embed_dim_ || x.dim(0) < 1 || x.dim(1) < 1)
    fail(ErrorKind::InvalidArgument, "{}: x {} must be [B, S, {}] with B, S >= 1", kMha, x.shape(), embed_dim_);
  const std::int64_t batch = x.dim(0), seq = x.dim(1), heads = num_heads_;
  const std::vector<Matrix> qkv = matrix::chunk(qkv_->forward(x.reshape({batch * seq, embed_dim_})), 3, 1);
  const Matrix q = split_heads(qkv[0], batch, seq, heads), k = split_heads(qkv[1], batch, seq, heads),
               v = split_heads(qkv[2], batch, seq, heads);
  Matrix o;
  if (training() && dropout_ > 0) {
    if (causal_ && (!causal_mask_.defined() || causal_mask_.dim(0) != seq)) {
      std::vector<float> mask(static_cast<std::size_t>(seq * seq), 0.0f);
      for (std::int64_t i = 0; i < seq; ++i)
        for (std::int64_t j = i + 1; j < seq; ++j) mask[static_cast<std::size_t>(i * seq + j)] = -std::numeric_limits<float>::infinity();
      causal_mask_ = Matrix::from_vector(Shape{seq, seq}, mask, x.engine());
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(embed_dim_ / heads));
    const Matrix weights = softmax_scaled_masked(bmm_nt(q, k), causal_ ? causal_mask_ : Matrix(), scale);
    o = bmm(ml::dropout(weights, dropout_, masks_.next_seed(), true), v);
  } else {
    o = scaled_dot_product_attention(q, k, v, Matrix(), std::nullopt, causal_);
  }
  return proj_->forward(merge_heads(o, batch, seq, heads)).reshape({batch, seq, embed_dim_});
}

TransformerBlock::TransformerBlock(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal,
                                   double dropout, std::optional<Engine> engine) {
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(embed_dim, 1e-5, true, true, engine));
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(embed_dim, num_heads, generator, causal, dropout, engine));
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
