#pragma once
// Activations along an axis (oa::ml): softmax, log_softmax. The elementwise
// activations (relu, gelu, tanh, sigmoid) are in oa/matrix/elementwise.hpp.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Along axis `dim` (negative counts from the end; the last by default), the
// row kernels below run on x with dim swapped with the last axis: one
// oa::matrix::transpose (a differentiable permuted copy) before and one after
// the op, recorded as their own semantic ops; none when dim is the last axis.
// x is f32, f16 or bf16; a 16-bit x is computed in f32 and the result (and
// gradient) rounded once to x's dtype, as PyTorch. Both throw InvalidArgument
// naming the op (softmax or log_softmax), dim and x's shape, before any work
// is recorded, for an undefined, rank-0 or non-float x or a dim out of range.

// Log-softmax along `dim` (torch.nn.functional.log_softmax(x, dim)), x of
// any shape [..., L, ...] -> x's shape, computed as (x - max) - log(sum(exp(x
// - max))) with cooperative row reductions, for rows of any length. A row
// whose every element is -inf gives -inf everywhere and a zero gradient
// (never NaN). Semantic op "oa::ml::log_softmax".
Matrix log_softmax(const Matrix& x, int dim = -1);

// Softmax along `dim` (torch.softmax(x, dim)), x of any shape -> x's shape:
// softmax_scaled_masked(x, {}, 1) of oa/ml/attention.hpp (its extreme values
// and NaN rules; gradient y * (gy - sum(y * gy))). An empty x gives an empty
// result (no dispatch), as PyTorch. Semantic op "oa::ml::softmax_scaled_masked".
Matrix softmax(const Matrix& x, int dim = -1);

}  // namespace oa::ml
