#pragma once
// Batched algebra and attention (oa::ml): bmm, bmm_nt, bmm_tn, split_heads,
// merge_heads, split_qkv_heads, softmax_scaled_masked, scaled_dot_product_attention,
// flash_attention, flash_attention_causal, scaled_dot_product_attention_causal.
//
// Values are F32 unless said otherwise below, contiguous and row-major. Each public call records ONE
// semantic op "oa::ml::<name>" (flash_attention and
// flash_attention_causal record "oa::ml::scaled_dot_product_attention"
// with attribute path = "flash"), validates every argument before anything is
// allocated or recorded, and attaches a reverse-mode rule when an input
// requires a gradient (every output is differentiable: the flash path's
// log-sum-exp and the materialised path's weights too; masks are not).
// Errors (oa::Error naming the op, the argument and the shapes):
// InvalidArgument for ranks, extents, dtypes, mixed engines and 32-bit index
// overflow; Unsupported for flash head dims above 256; ResourceExhausted when
// one operand exceeds the device's maxStorageBufferRange.
//
// Numerical conventions (DESIGN.md):
// - Softmax and attention rows whose every position is masked (all -inf, or a
//   causal row with no visible key) give zero output and zero gradient, never
//   NaN; their log-sum-exp is -inf. So does attention over no keys (k and v
//   with Sk = 0): output zeros [.., Sq, Dv], q's gradient zeros, k's and v's
//   empty, as PyTorch's math path (an empty softmax times an empty v). No
//   query rows (Sq = 0, or B, H or BH 0) give an empty output and zero k and
//   v gradients (no dispatch), as PyTorch.
// - Only -inf hides a key. A finite mask, however large (-1e9, -FLT_MAX =
//   finfo(float32).min), is an ordinary value: the f32 logit is
//   fma(score, scale, mask), rounded once, so a mask that dwarfs the score
//   absorbs it as in PyTorch's f32 arithmetic. A row masked by -FLT_MAX
//   everywhere therefore has uniform weights (output = mean of v), a row of
//   -FLT_MAX and 0 weights only the 0 keys, and sums of huge terms never make
//   NaN. Both paths, forward and backward, agree on this.
// - Large logits (|scale q.k| up to ~1e6, or a large common offset) lose no
//   more than the f32 rounding of the inputs: the flash path keeps raw scores
//   and the running max in the same units (FlashAttention-2's fma form), the
//   materialised path subtracts the exact row max, so errors are relative to a
//   row's spread, not its magnitude.
// - NaN propagates: a NaN logit makes its whole softmax row (and that query's
//   attention output) NaN, as torch.softmax does, on every path here.
// - `causal` with query length Sq != key length Sk is aligned bottom-right by
//   default: query i sees keys j <= i + Sk - Sq (FlashAttention 2.1+, MLX,
//   torch's CausalVariant.LOWER_RIGHT). CausalVariant::UpperLeft aligns it
//   top-left instead: query i sees keys j <= i (torch's is_causal=True, a
//   torch.tril mask, CausalVariant.UPPER_LEFT). The two agree when Sq = Sk.
//   Every path (flash, materialised, decoding) honours either.
// - Where `scale` is optional its default is 1/sqrt(head_dim); an explicit
//   value (1.0 included) is honoured.
// - Additive masks are detached: no gradient flows into them.
// - Forward results are bitwise deterministic (no floating-point atomics).
//
// 16 bits: scaled_dot_product_attention (every path), flash_attention,
// flash_attention_causal, scaled_dot_product_attention_causal and their
// backwards also take F16 or BF16 q, k, v (one dtype for the three: mixing
// them is InvalidArgument naming the op and each dtype). The additive mask
// stays F32 (or Bool). Output and gradients have q's dtype; scores, softmax
// statistics (log-sum-exp, softmax_stats), the materialised weights and
// every accumulator are F32, as in torch's kernels. GEMM-shaped work (scores
// q k^T with F32 results, P v; in the backward dO v^T, P^T dO, dS k, dS^T q)
// goes through the shared GEMM lowering, on tensor cores where the device
// has cooperative matrices; P and dS are rounded to q's dtype before their
// GEMMs, as torch's math path rounds the softmax. The fused flash kernels
// (decoding included) widen each element as they read it and compute in
// F32; each result is rounded once. Where the device has cooperative
// matrices for the dtype (and the tuning point attention.coopmat_forward
// allows it), the flash forward with Dh = Dv a multiple of 16 up to 128 and
// more than 4 query rows runs on the tensor cores instead: q k^T with F32
// accumulation, the online softmax in F32, P rounded to q's dtype before
// P v (as FlashAttention-2's fp16 kernels), the output rounded once; with
// workgroup-scope matrices (VK_NV_cooperative_matrix2) the f16 forward keeps
// a whole tile of scores in them and sums each row's P as rounded to f16
// (the weights P v takes, so they sum to one), else each subgroup takes 16
// or 32 rows.
// With those matrices the f16 flash backward can run on the tensor cores too
// (tuning point attention.coopmat_backward): its products accumulate in F32,
// P and dS are rounded to f16 before theirs, the gradients once. The
// conventions above hold for the rounded inputs.
#include <cstdint>
#include <optional>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// ── Batched matrix products ─────────────────────────────────────────────────
// torch.bmm: for every n, C[n] = A[n] @ B[n]. Any N (also above the
// device's 65535 workgroups per grid dimension) and any M, K, P >= 0, as
// torch.bmm: an inner extent K = 0 gives zeros [N, M, P] (and zero
// gradients); N, M or P = 0 gives an empty result (no dispatch).
//   bmm:    A [N, M, K], B [N, K, P] -> [N, M, P]
//   bmm_nt: A [N, M, K], B [N, P, K] -> [N, M, P]   (A @ B^T)
//   bmm_tn: A [N, K, M], B [N, K, P] -> [N, M, P]   (A^T @ B)
// Dtypes: A and B both f32, both f16 or both bf16; C and the gradients have
// their dtype, computed with f32 accumulation (16-bit operands: the f32 tiled
// kernels on 16-bit storage, each element widened as loaded and the result
// rounded once, to nearest even; a tensor-core kernel where the device has
// cooperative matrices). Gradients flow to both operands. InvalidArgument for
// ranks other than 3, batch / inner extents that differ, or operands of
// different dtypes (naming both, with their dtypes and shapes).
Matrix bmm(const Matrix& a, const Matrix& b);
Matrix bmm_nt(const Matrix& a, const Matrix& b);
Matrix bmm_tn(const Matrix& a, const Matrix& b);

// ── Heads ───────────────────────────────────────────────────────────────────
// split_heads: x [B*S, D] (row b*S + s, columns h*(D/H) .. (h+1)*(D/H)) ->
// [B*H, S, D/H] with head b*H + h. Requires B, S >= 0, H >= 1, x.rows == B*S
// and D divisible by H; an empty x (B, S or D = 0, as torch's view and
// transpose take) gives an empty result and records no dispatch, forward
// and backward. merge_heads is its exact inverse ([B*H, S, Dh] -> [B*S,
// H*Dh]). With H = 1 both are zero-copy reshapes and record no head op. The
// backward of one is the other. x is f32, f16 or bf16 (the result has its
// dtype: the permutation moves bits, so under autocast a 16-bit projection
// reaches attention without casts).
Matrix split_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads);
Matrix merge_heads(const Matrix& x, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads);

// split_qkv_heads: a fused projection qkv [B*S, 3*D] (row b*S + s holds q,
// then k, then v, D = H*Dh columns each) -> q, k, v [B*H, S, Dh], as
// split_heads of each third of matrix::chunk(qkv, 3, 1) (the layout of
// nn::MultiHeadAttention's qkv Linear) but in one pass; its backward writes
// the gradient of qkv in one pass too. Requires B, S >= 0, H >= 1, qkv.rows
// == B*S and columns divisible by 3*H (InvalidArgument naming the op and
// qkv's shape otherwise); an empty qkv gives empty q, k, v. qkv is f32,
// f16 or bf16, and q, k, v have its dtype.
struct QkvHeads {
  Matrix q, k, v;
};
QkvHeads split_qkv_heads(const Matrix& qkv, std::int64_t batch, std::int64_t seq_len, std::int64_t num_heads);

// ── Softmax ─────────────────────────────────────────────────────────────────
// softmax(scores * scale + mask) over the last axis (torch.softmax of the
// scaled, masked logits). scores has rank >= 1 and is viewed as rows of its
// last extent (any length, 1 to 65536 and beyond: one workgroup reduces each
// long row cooperatively). `mask` is optional (an undefined Matrix means
// none), detached from autograd, and either has the shape of `scores` or
// broadcasts to it as PyTorch broadcasts (rank <= 4, last extent Sk; for
// scores [B, H, Sq, Sk]: [Sq, Sk], [1, 1, Sq, Sk], [B, 1, Sq, Sk], [B, 1, 1,
// Sk], ...), read through strides, never copied. Logits are
// fma(scores, scale, mask). Stable for large logits and large common offsets
// (softmax([1000, 0]) = [1, 0], softmax([1e30, 1e30]) = [0.5, 0.5]); fully
// masked rows are zero; a NaN logit makes its row NaN. Empty scores give an
// empty result. scores f32, f16 or bf16 (16-bit computed in f32, the result
// in scores' dtype).
Matrix softmax_scaled_masked(const Matrix& scores, const Matrix& mask, float scale);

// ── Attention ───────────────────────────────────────────────────────────────
// Shapes: q [BH, Sq, Dh], k [BH, Sk, Dh], v [BH, Sk, Dv] -> output [BH, Sq, Dv]
// with output = softmax(scale * q k^T + mask (+ causal)) v per batch-head;
// or PyTorch's 4-D form q [B, H, Sq, Dh], k [B, H, Sk, Dh], v [B, H, Sk, Dv]
// -> [B, H, Sq, Dv] (log-sum-exp [B, H, Sq], weights [B, H, Sq, Sk]).
// `additive_mask` is optional (undefined = none): one row per score row
// [BH*Sq, Sk], or any shape that broadcasts to the scores [B, H, Sq, Sk]
// (3-D inputs: [BH, Sq, Sk]) as PyTorch broadcasts, with last extent Sk:
// [Sq, Sk], [1, 1, Sq, Sk], [B, 1, Sq, Sk], [B, H, Sq, Sk], [B, 1, 1, Sk], ...
// The kernels read it through strides (no per-head copy). -inf entries hide
// keys. Bad mask shapes or dtypes: InvalidArgument naming the op, the mask
// as attn_mask (torch's name: it may be Bool) and the scores' shape. Source: "Attention Is All You Need" (Vaswani et al. 2017),
// torch.nn.functional.scaled_dot_product_attention (its is_causal is
// causal with CausalVariant::UpperLeft).

// Where a causal diagonal starts when Sq != Sk (torch.nn.attention.bias.CausalVariant):
// LowerRight: query i sees keys j <= i + Sk - Sq; UpperLeft: keys j <= i.
enum class CausalVariant { LowerRight, UpperLeft };

// Which implementation scaled_dot_product_attention runs (as PyTorch's
// torch.nn.attention.SDPBackend / sdpa_kernel): Flash = the tiled flash
// kernels (Dh, Dv <= 256, Unsupported otherwise), Math = the materialised path
// (bmm_nt, softmax_scaled_masked, bmm; O(BH Sq Sk) memory), Auto = Flash when
// the head dims allow it, else Math. Both compute the same function within
// f32 rounding.
enum class SdpaBackend { Auto, Flash, Math };

// Scoped backend choice for this thread (torch.nn.attention.sdpa_kernel):
// while a guard lives, scaled_dot_product_attention calls made with
// backend = Auto (and modules calling it, such as nn::MultiHeadAttention)
// use `backend`. Guards nest; destruction restores the previous choice.
class SdpaBackendGuard {
 public:
  explicit SdpaBackendGuard(SdpaBackend backend);
  ~SdpaBackendGuard();
  SdpaBackendGuard(const SdpaBackendGuard&) = delete;
  SdpaBackendGuard& operator=(const SdpaBackendGuard&) = delete;
  // The choice in force on this thread (Auto without a guard).
  static SdpaBackend current();

 private:
  SdpaBackend previous_;
  static thread_local SdpaBackend sdpa_backend_;
};

// Output and log-sum-exp of the flash path.
struct FlashAttentionResult {
  Matrix output;       // [BH, Sq, Dv] ([B, H, Sq, Dv] for 4-D inputs)
  Matrix log_sum_exp;  // [BH, Sq] ([B, H, Sq]), natural log of sum_j exp(scale q.k_j + mask); -inf for a fully masked row
  // [BH, Sq, 2] ([B, H, Sq, 2]): per row the running max m and log2 of the row
  // sum, what the backward recomputes probabilities from (a single f32
  // log-sum-exp cannot hold log l next to a huge m, e.g. -1e9 + log Sk). m is
  // a raw score q.k (times the sign of scale) without a mask, the natural-log
  // logit with one; (-inf, -inf) for a fully masked row. Pass it unchanged to
  // flash_attention_backward.
  Matrix softmax_stats;
};
// Output and the materialised attention probabilities.
struct AttentionWithWeights {
  Matrix output;   // [BH, Sq, Dv], q's dtype
  Matrix weights;  // [BH, Sq, Sk], F32 softmax probabilities (zero rows where fully masked)
};

// Flash attention (FlashAttention-2, Dao 2023): tiled online softmax with
// blocks of queries against blocks of keys in shared memory; no Sq x Sk matrix
// is ever stored and there is no sequence cap. Memory O(BH * Sq * (Dv + 1)).
// When few query rows would leave the device idle (decoding, short prompt
// chunks) the keys are split into ranges merged by their log-sum-exp
// afterwards (flash-decoding), with O(ranges * BH * Sq * Dv) scratch.
// Dh and Dv must be <= 256 (Unsupported otherwise). The backward recomputes
// probabilities from the saved softmax stats (flash_attention_backward).
FlashAttentionResult flash_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask = {},
                                     std::optional<float> scale = {}, bool causal = false,
                                     CausalVariant causal_variant = CausalVariant::LowerRight);

// Scaled dot-product attention on the path `backend` picks (Auto: the
// thread's SdpaBackendGuard, else flash when Dh and Dv are <= 256, else the
// materialised path). Saves what its backward needs.
Matrix scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask = {},
                                    std::optional<float> scale = {}, bool causal = false,
                                    SdpaBackend backend = SdpaBackend::Auto,
                                    CausalVariant causal_variant = CausalVariant::LowerRight);

// The materialised path, for callers that need the probabilities: scores
// [BH, Sq, Sk] = q k^T, weights = softmax_scaled_masked(scores, mask, scale)
// (with causal hiding), output = weights @ v. Memory O(BH * Sq * Sk).
AttentionWithWeights scaled_dot_product_attention_with_weights(const Matrix& q, const Matrix& k, const Matrix& v,
                                                               const Matrix& additive_mask = {},
                                                               std::optional<float> scale = {}, bool causal = false,
                                                               CausalVariant causal_variant = CausalVariant::LowerRight);

// Causal flash attention without a mask, on flattened heads: q [BH, Sq,
// Dh], k [BH, Sk, Dh], v [BH, Sk, Dv] as flash_attention; returns the output
// and saves one log-sum-exp per query row for the backward.
Matrix flash_attention_causal(const Matrix& q, const Matrix& k, const Matrix& v, float scale);

// Multi-head causal self-attention on packed rows: q, k, v [B*S, D] with
// S = seq_len, H = num_heads, D divisible by H; equivalent to
// merge_heads(flash causal attention(split_heads(q), split_heads(k),
// split_heads(v)), scale 1/sqrt(D/H)) but reads and writes the packed layout
// directly (no head copies). Returns [B*S, D].
Matrix scaled_dot_product_attention_causal(const Matrix& q, const Matrix& k, const Matrix& v, std::int64_t seq_len,
                                           std::int64_t num_heads);

// ── Explicit backward lowerings ─────────────────────────────────────────────
// What the autograd rules call; usable directly. Each validates like its
// forward and records one semantic op labelled "<forward name> backward".

enum class BmmLayout { NN, NT, TN };  // bmm, bmm_nt, bmm_tn
struct BmmGradients {
  Matrix a, b;
};
// Gradients of C = op(A) op(B) for the given layout with respect to a and b,
// given grad [N, M, P]; only those asked for are computed (the others stay
// undefined, and nothing is recorded when neither is).
BmmGradients bmm_backward(BmmLayout layout, const Matrix& a, const Matrix& b, const Matrix& grad, bool need_a = true,
                          bool need_b = true);

// d scores = scale * y * (grad - rowsum(y * grad)) for y = softmax_scaled_masked(...).
Matrix softmax_scaled_masked_backward(const Matrix& probabilities, const Matrix& grad, float scale);

struct AttentionGradients {
  Matrix q, k, v;
};
// Flash backward from the forward's output and softmax_stats, lowered one of
// two ways, both deterministic (no atomics):
// - fused: two passes, one over query blocks for dq, one over key blocks for
//   dk and dv (with few keys the second also splits the queries into ranges
//   whose partial sums a third pass adds in a fixed order); O(BH * Sq) scratch;
// - through GEMMs, on GPUs where they are faster (at least 64 queries and
//   keys, [BH, S, D] inputs): the scores and their gradients of a chunk of
//   batch-heads are materialised (causal: one block of 256 query rows at a
//   time, against the keys it sees), up to 2 x 128 MiB of scratch (one
//   head's block at least; the fused passes serve larger ones), then
//   dv = P^T grad, dq = dS k, dk = dS^T q as for the materialised path,
//   from the same probabilities.
// `scale` is the value the forward used (already resolved, not optional).
// `grad_log_sum_exp` [BH, Sq] (optional) is a gradient reaching the
// log-sum-exp output (d lse_i / d s_ij = p_ij). output and grad have q's
// dtype; softmax_stats and grad_log_sum_exp are F32.
AttentionGradients flash_attention_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& additive_mask,
                                            const Matrix& output, const Matrix& softmax_stats, const Matrix& grad,
                                            float scale, bool causal, const Matrix& grad_log_sum_exp = {},
                                            CausalVariant causal_variant = CausalVariant::LowerRight);
// Materialised-path backward from the saved weights: dv = P^T g,
// dP = g v^T (+ grad_weights, a gradient reaching the weights output),
// dS = softmax backward, dq = dS k, dk = dS^T q. grad has q's dtype;
// weights and grad_weights are F32.
AttentionGradients attention_weights_backward(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& weights,
                                              const Matrix& grad, float scale, const Matrix& grad_weights = {});

}  // namespace oa::ml
