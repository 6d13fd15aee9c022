#pragma once
// Multi-head self-attention and the pre-norm Transformer block.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "oa/ml/generator.hpp"
#include "oa/ml/nn/dropout.hpp"
#include "oa/ml/nn/linear.hpp"
#include "oa/ml/nn/norm.hpp"
#include "oa/ml/nn/sequential.hpp"

namespace oa::ml::nn {

// Multi-head self-attention (Vaswani et al. 2017) on x [B, S, D] -> [B, S, D]
// with D = embed_dim and H = num_heads (D divisible by H, head size D / H):
//   q, k, v = chunk(qkv(x), 3)                 one fused projection D -> 3D, split
//                                              into heads in one pass (split_qkv_heads)
//   o_h = softmax(q_h k_h^T / sqrt(D / H)) v_h  per head, causal
//                                              (query i sees keys j <= i) when `causal`
//   y = proj(merge_heads(o))
// Children: `qkv` = Linear(D, 3D) (rows 0..D-1 of its weight project q, then
// k, then v) and `proj` = Linear(D, D), both without biases when `bias` is
// false (torch's bias=False), initialised as torch.nn.Linear (the
// layout of timm's and nanoGPT's attention; torch.nn.MultiheadAttention
// stores the same projection as in_proj_weight but initialises it with
// xavier-uniform and zero biases). Attention runs on the flash path
// (oa::ml::scaled_dot_product_attention: no S x S matrix is stored) except in
// training mode with dropout > 0, where the probabilities are materialised so
// that dropout can act on them, as PyTorch applies attention dropout; the
// k-th such forward uses the k-th seed of a Generator seeded with the first
// seed the constructor draws from `generator` (before the projections').
// Throws InvalidArgument for embed_dim or num_heads below 1, embed_dim not
// divisible by num_heads, or dropout outside [0, 1); forward throws
// InvalidArgument naming "oa::ml::nn::MultiHeadAttention" for x not
// [B, S, embed_dim].
//
// forward(query, key, value, key_padding_mask, attn_mask) is
// torch.nn.MultiheadAttention's forward with batch_first = True (returning
// the output only): query [B, Sq, D], key and value [B, Sk, D], projected by
// the q, k and v rows of `qkv` (so forward(x, x, x) equals forward(x)).
// key_padding_mask [B, Sk] (optional): Bool, true = that key is ignored (a
// -inf score), or F32 added to the scores. attn_mask (optional): [Sq, Sk] or
// [B * H, Sq, Sk] (head h of batch b at row b * H + h), Bool, true = not
// allowed to attend, or F32 added to the scores. Both masks, `causal` and
// dropout combine. A query that may attend to no key gets a zero output (the
// softmax convention of oa/ml/attention.hpp; PyTorch gives NaN there); so
// does every query when there are no keys (Sk = 0), as SDPA: the output is
// the output projection's bias.
// forward_with_weights takes forward's arguments and also returns the
// attention probabilities per head, weights [B, H, Sq, Sk] F32 (torch's
// need_weights=True with average_attn_weights=False; their mean over H is
// torch's default), after dropout in training as torch's; it always
// materialises them (O(B H Sq Sk) memory), and gradients reach the inputs
// and parameters through the output and the weights both. A query that may
// attend to no key has a zero row of weights (torch: NaN).
// forward_inputs takes {x} or {query, key, value[, key_padding_mask[,
// attn_mask]]}. Throws InvalidArgument naming the module, the argument and
// the shapes for other shapes or dtypes.
//
// kdim and vdim (torch's; default embed_dim): the last extents of key and
// value. When either differs from embed_dim the module holds torch's
// separate projections instead of `qkv`: own parameters q_proj_weight [D, D],
// k_proj_weight [D, kdim], v_proj_weight [D, vdim] (xavier-uniform) and
// in_proj_bias [3D] (zeros; absent when `bias` is false), then the child
// `proj` (torch's names and order; qkv() is null). forward(query, key, value)
// then takes key [B, Sk, kdim] and value [B, Sk, vdim]; forward(x) (self-
// attention, which needs kdim == vdim == D) throws InvalidArgument. The
// attention itself is the same either way. Throws InvalidArgument for kdim
// or vdim below 1.
struct MultiHeadAttentionOutput {
  Matrix output;   // [B, Sq, D]
  Matrix weights;  // [B, H, Sq, Sk], F32
};
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal = false, double dropout = 0.0,
                     bool bias = true, std::optional<Engine> engine = {}, std::optional<std::int64_t> kdim = {},
                     std::optional<std::int64_t> vdim = {});
  Matrix forward(const Matrix& x) override;
  Matrix forward(const Matrix& query, const Matrix& key, const Matrix& value, const Matrix& key_padding_mask = Matrix(),
                 const Matrix& attn_mask = Matrix());
  MultiHeadAttentionOutput forward_with_weights(const Matrix& query, const Matrix& key, const Matrix& value,
                                                const Matrix& key_padding_mask = Matrix(), const Matrix& attn_mask = Matrix());
  Matrix forward_inputs(std::span<const Matrix> inputs) override;
  std::string type_name() const override { return "MultiHeadAttention"; }
  const std::shared_ptr<Linear>& qkv() const { return qkv_; }
  const std::shared_ptr<Linear>& proj() const { return proj_; }
  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  std::int64_t kdim() const { return kdim_; }
  std::int64_t vdim() const { return vdim_; }
  bool causal() const { return causal_; }

 protected:
  bool rebind_parameter(const std::string& name, const Parameter& p) override;

 private:
  std::int64_t embed_dim_, num_heads_, kdim_, vdim_;
  bool causal_;
  double dropout_;
  Generator masks_;
  // forward(query, key, value, masks), also setting *weights [B, H, Sq, Sk] when weights is not null.
  Matrix forward_masked(const Matrix& query, const Matrix& key, const Matrix& value, const Matrix& key_padding_mask,
                        const Matrix& attn_mask, Matrix* weights);
  // Attention of the heads q [B, H, Sq, Dh], k and v [B, H, Sk, Dh] with an
  // optional additive mask broadcasting to [B, H, Sq, Sk]; returns [B * Sq, D]
  // and, when weights is not null, sets *weights to the probabilities [B, H, Sq, Sk].
  Matrix attend(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask, Matrix* weights = nullptr);

  std::shared_ptr<Linear> qkv_, proj_;  // qkv_ is null when kdim or vdim differs from embed_dim
  // The separate projections of that case: q, k, v weights, then in_proj_bias (undefined without bias).
  std::array<Parameter, 3> proj_weights_;
  Parameter in_proj_bias_;
  Matrix causal_mask_;  // [S, S] additive mask for the materialised path, rebuilt when S changes
};

// Pre-norm Transformer block (GPT-2, "Language Models are Unsupervised
// Multitask Learners"; Xiong et al. 2020) on x [B, S, D]:
//   x = x + attn(norm1(x))
//   x = x + mlp(norm2(x)),   mlp = Linear(D, 4D) -> GELU -> Linear(4D, D)
// Children `norm1` (LayerNorm), `attn` (MultiHeadAttention), `norm2`
// (LayerNorm), `mlp` (Sequential: `0` Linear, `1` GELU, `2` Linear), so its
// parameters are norm1.weight, norm1.bias, attn.qkv.weight, attn.qkv.bias,
// attn.proj.weight, attn.proj.bias, norm2.weight, norm2.bias, mlp.0.weight,
// mlp.0.bias, mlp.2.weight, mlp.2.bias: 12 D^2 + 13 D in all. Throws what
// MultiHeadAttention throws.
class TransformerBlock : public Module {
 public:
  TransformerBlock(std::int64_t embed_dim, std::int64_t num_heads, Generator& generator, bool causal = false,
                   double dropout = 0.0, std::optional<Engine> engine = {});
  Matrix forward(const Matrix& x) override;
  std::string type_name() const override { return "TransformerBlock"; }
  const std::shared_ptr<MultiHeadAttention>& attn() const { return attn_; }

 private:
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<Sequential> mlp_;
};

}  // namespace oa::ml::nn
