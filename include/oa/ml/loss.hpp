#pragma once
// Losses and metrics (oa::ml): cross_entropy, mse_loss, accuracy.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <cstdint>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

enum class Reduction { None, Mean, Sum };

struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;  // targets equal to it contribute nothing
  double label_smoothing = 0.0;      // in [0, 1]
};

// Cross entropy of logits [N, C] against class indices targets i32 [N]
// (torch.nn.functional.cross_entropy), one op fused with the log-softmax: per row
//   loss_i = -sum_j q_j log_softmax(x_i)_j,  q = (1 - s) onehot(t_i) + s / C
// for label smoothing s, computed as log(sum(exp(x - m))) - sum_j q_j (x_j - m)
// with m the row maximum; rows whose target is ignore_index give 0 (and a
// zero gradient) whatever their logits. Mean
// divides the total by the number of rows not ignored (NaN when every row is
// ignored, as PyTorch); Sum gives the total; None gives the losses [N].
// N = 0 is an empty batch: Mean gives NaN, Sum 0, None an empty [0], as
// PyTorch (C must be at least 1).
// A target outside [0, C) other than ignore_index gives NaN (for the row, and
// so for a reduced loss) and a NaN gradient, and raises OutOfRange, naming the
// target and logits, at the next synchronize() or host read after the GPU ran
// the op (Engine::register_device_check: no host round trip at the op; its
// backward checks again).
// Gradient for the logits. Semantic op "oa::ml::cross_entropy", attributes
// reduction ("none", "mean", "sum"), ignore_index, label_smoothing.
//
// torch's other forms are accepted too, each lowered onto the [N, C] op or
// composed of recorded ops:
// - logits [C] with a target [] (one sample), and logits [N, C, d1, ...] (a
//   class axis second, as image segmentation's [N, C, H, W]) with targets
//   [N, d1, ...]: the class axis is moved last (oa::matrix::permute) and the
//   positions flattened into rows; None gives the losses in targets' shape.
// - class probabilities: f32 targets of logits' shape, p summing to 1 over the
//   class axis: loss = -sum_c q_c log_softmax(x)_c per position with
//   q = (1 - s) p + s / C; Mean divides by the number of positions;
//   ignore_index does not apply. Gradients to the logits and the targets.
// Every form takes f16 and bf16 logits too, widened to f32 first (recorded
// oa::matrix::cast), computing in f32 and giving an f32 loss. Errors
// (InvalidArgument): class-index targets whose shape is not logits' without
// the class axis, f32 targets of another shape, rank-0 logits.
Matrix cross_entropy(const Matrix& logits, const Matrix& targets, const CrossEntropyOptions& options = {});

// Mean squared error (torch.nn.functional.mse_loss): (input - target)^2 with
// the reduction (Mean over every element, Sum, or None: input's shape).
// input and target have the same shape; no elements give Mean NaN, Sum 0
// and None an empty loss (no dispatch), as PyTorch. Gradients for both.
// Semantic op "oa::ml::mse_loss", attribute reduction.
Matrix mse_loss(const Matrix& input, const Matrix& target, Reduction reduction = Reduction::Mean);

// Classification accuracy: the fraction of rows of logits [N, C] (N, C >= 1) whose first
// arg-maximum equals targets i32 [N], as an f32 Matrix [] (read it with
// item(); no host round trip until then). Not differentiable. Semantic op
// "oa::ml::accuracy".
Matrix accuracy(const Matrix& logits, const Matrix& targets);

}  // namespace oa::ml
