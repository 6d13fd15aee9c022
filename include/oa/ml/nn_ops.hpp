#pragma once
// Ops that neural-network models need (oa::ml): normalisation, pooling,
// embedding lookup, dropout, log-softmax, losses and an accuracy metric, each
// with PyTorch semantics (the torch.nn.functional function named at each op).
//
// All floating-point values are f32 (index inputs i32), row-major and
// contiguous, on one engine; activations are NCHW where an op is 2-D.
//
// Trace and autograd: every call records exactly one semantic op
// "oa::ml::<name>" (with the attributes listed at the op), however many
// dispatches it lowers to, except dropout outside training, which records
// nothing. Differentiable ops attach a reverse-mode rule; its work appears as
// one "oa::ml::<name> backward" op computing only the gradients that are
// needed. Forward results are bitwise reproducible on one device, and no
// backward pass uses floating-point atomics: reductions are cooperative trees
// over fixed segments, and scatter-shaped gradients (pooling, embedding) are
// computed in gather form.
//
// Extreme values: the row ops (log_softmax, cross_entropy, layer_norm, and
// batch_norm_2d's channels in training) take every statistic relative to a
// value of the row (its maximum, or for the normalisations its first
// element), so a large common offset costs no precision: results match an
// f64 computation on the same f32 inputs for offsets up to 1e30. NaN: a NaN
// anywhere in such a row makes every output and gradient of that row NaN, as
// PyTorch; the elementwise ops (mse_loss, dropout, batch_norm_2d outside
// training) propagate NaN per element.
//
// Errors (oa::Error): InvalidArgument, naming the op, the argument and the
// shapes, for an undefined operand, a wrong dtype, rank or extent, operands on
// different engines, an option out of range, or extents past what the shaders
// index (element counts beyond 2^32 - 1). Validation precedes all work: a
// failed call allocates and records nothing. ResourceExhausted when an operand
// exceeds the device's maxStorageBufferRange (128 MiB on lavapipe) or memory
// runs out.
#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// ── Normalisation ───────────────────────────────────────────────────────────

// Layer normalisation over the last axis (Ba, Kiros and Hinton 2016;
// torch.nn.functional.layer_norm with normalized_shape = [D]):
//   y = (x - mean) / sqrt(var + eps) * weight + bias,
// mean and the biased variance var taken over each row of x [..., D], in two
// passes about the row's first element (finite in f32: a row spread below
// about 1e19).
// weight [D] and bias [D] may each be undefined (Matrix()): weight 1, bias 0.
// x of any rank >= 1 with D >= 1 (zero rows give an empty result); eps >= 0.
// Gradients for x, weight and bias. Semantic op "oa::ml::layer_norm",
// attribute eps; its inputs are x and the weight and bias that are given.
Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps = 1e-5);

// Batch normalisation of NCHW activations (Ioffe and Szegedy 2015;
// torch.nn.functional.batch_norm): per channel c,
//   y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c.
// training: mean_c and the biased variance var_c over the N * H * W values of
//   channel c (more than one is required; two passes about the channel's
//   first value, finite in f32: a spread below about 1e19), and the running statistics are
//   updated in place on the GPU (their versions are bumped):
//   running_mean = (1 - momentum) running_mean + momentum mean_c,
//   running_var = (1 - momentum) running_var + momentum unbiased var_c.
// otherwise: mean_c = running_mean, var_c = running_var, which stay unchanged.
// x [N, C, H, W] with nonzero extents; weight and bias [C] or undefined (1 and 0);
// running_mean and running_var [C], required. momentum in [0, 1], eps >= 0.
// Gradients for x, weight and bias in both modes (in training they flow
// through the batch statistics). Semantic op "oa::ml::batch_norm_2d",
// attributes training, momentum, eps; inputs x, the weight and bias that are
// given, running_mean, running_var.
Matrix batch_norm_2d(const Matrix& x, const Matrix& weight, const Matrix& bias, const Matrix& running_mean,
                     const Matrix& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

// ── Pooling ─────────────────────────────────────────────────────────────────

// Per-axis options {height, width}. stride defaults to kernel_size (PyTorch's
// default); padding is applied on both sides of each axis and may be at most
// half the kernel. ceil_mode false and dilation 1, as PyTorch's defaults:
//   out = floor((in + 2 padding - kernel) / stride) + 1.
struct Pool2dOptions {
  std::array<std::int64_t, 2> kernel_size{1, 1};
  std::optional<std::array<std::int64_t, 2>> stride;
  std::array<std::int64_t, 2> padding{0, 0};
};

// Max pooling (torch.nn.functional.max_pool2d): x [N, C, H, W] ->
// [N, C, OH, OW], padding counting as -inf; a NaN in a window wins. The
// gradient goes to the first maximum of each window (row-major order).
// Semantic op "oa::ml::max_pool_2d", attributes kernel_size, stride, padding.
Matrix max_pool_2d(const Matrix& x, const Pool2dOptions& options);
// Square kernel; stride 0 means stride = kernel_size.
Matrix max_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);

// Average pooling (torch.nn.functional.avg_pool2d with count_include_pad =
// true): the window sum over kernel_h * kernel_w, padding counting as zeros.
// Semantic op "oa::ml::avg_pool_2d", attributes kernel_size, stride, padding.
Matrix avg_pool_2d(const Matrix& x, const Pool2dOptions& options);
Matrix avg_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride = 0, std::int64_t padding = 0);

// Global average pooling: x [N, C, H, W] -> [N, C], the mean over H * W
// (torch.nn.functional.adaptive_avg_pool2d(x, 1) flattened). Semantic op
// "oa::ml::global_avg_pool_2d".
Matrix global_avg_pool_2d(const Matrix& x);

// ── Embedding ───────────────────────────────────────────────────────────────

// Embedding lookup (torch.nn.functional.embedding): indices i32 [...] (rank
// <= 7) and weight [V, D] give [..., D] with out[..., :] = weight[index, :].
// Indices already on the device cannot be checked without a host round trip:
// an index outside [0, V) gives a zero row and contributes no gradient. The
// weight gradient is a deterministic segmented reduction (the indices sorted
// by a bitonic network, then each vocabulary row summed in position order).
// Semantic op "oa::ml::embedding"; inputs indices, weight.
Matrix embedding(const Matrix& indices, const Matrix& weight);
// The same with indices from the host, shaped `shape` (values.size() must be
// its element count): every index is checked (InvalidArgument naming the
// position and value when outside [0, V)) before they are uploaded.
Matrix embedding(std::span<const std::int32_t> indices, const Shape& shape, const Matrix& weight);

// ── Dropout ─────────────────────────────────────────────────────────────────

// Dropout (Srivastava et al. 2014; torch.nn.functional.dropout): in training,
// element i is zeroed with probability p and otherwise scaled by 1 / (1 - p);
// the mask comes from the counter-based Philox-4x32-10 generator keyed by
// `seed` (element i is kept when Matrix::uniform(x.shape(), 0, 1, seed)'s
// element i is >= p), so it is the same on every device and the backward pass
// regenerates it rather than storing it. Outside training (or never) x is
// returned as is and nothing is recorded. p in [0, 1]. Semantic op
// "oa::ml::dropout", attributes p, seed.
Matrix dropout(const Matrix& x, double p, std::uint64_t seed, bool training = true);

// ── Log-softmax ─────────────────────────────────────────────────────────────

// Log-softmax over the last axis (torch.nn.functional.log_softmax(x, -1)),
// computed as (x - max) - log(sum(exp(x - max))) with cooperative row
// reductions, for rows of any length. A row whose every element is -inf gives
// -inf everywhere and a zero gradient (never NaN). x of rank >= 1. Semantic op
// "oa::ml::log_softmax".
Matrix log_softmax(const Matrix& x);

// ── Losses and metrics ──────────────────────────────────────────────────────

enum class Reduction { None, Mean, Sum };

struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;  // targets equal to it contribute nothing
  double label_smoothing = 0.0;      // in [0, 1]
};

// Cross entropy of logits [N, C] against class indices targets i32 [N]
// (torch.nn.functional.cross_entropy), fused with the log-softmax: per row
//   loss_i = -sum_j q_j log_softmax(x_i)_j,  q = (1 - s) onehot(t_i) + s / C
// for label smoothing s, computed as log(sum(exp(x - m))) - sum_j q_j (x_j - m)
// with m the row maximum; rows whose target is ignore_index give 0 (and a
// zero gradient) whatever their logits. Mean
// divides the total by the number of rows not ignored (NaN when every row is
// ignored, as PyTorch); Sum gives the total; None gives the losses [N].
// Targets outside [0, C) other than ignore_index give NaN (for the row, and so
// for a reduced loss) and a NaN gradient; they are not checked on the host.
// Gradient for the logits. Semantic op "oa::ml::cross_entropy", attributes
// reduction ("none", "mean", "sum"), ignore_index, label_smoothing.
Matrix cross_entropy(const Matrix& logits, const Matrix& targets, const CrossEntropyOptions& options = {});

// Mean squared error (torch.nn.functional.mse_loss): (input - target)^2 with
// the reduction (Mean over every element, Sum, or None: input's shape).
// input and target have the same nonempty shape. Gradients for both.
// Semantic op "oa::ml::mse_loss", attribute reduction.
Matrix mse_loss(const Matrix& input, const Matrix& target, Reduction reduction = Reduction::Mean);

// Classification accuracy: the fraction of rows of logits [N, C] whose first
// arg-maximum equals targets i32 [N], as an f32 Matrix [] (read it with
// item(); no host round trip until then). Not differentiable. Semantic op
// "oa::ml::accuracy".
Matrix accuracy(const Matrix& logits, const Matrix& targets);

}  // namespace oa::ml
