#pragma once
// Activations over a row (oa::ml): log_softmax. The elementwise activations
// (relu, gelu, tanh, sigmoid) are in oa/matrix/elementwise.hpp.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Log-softmax over the last axis (torch.nn.functional.log_softmax(x, -1)),
// computed as (x - max) - log(sum(exp(x - max))) with cooperative row
// reductions, for rows of any length. A row whose every element is -inf gives
// -inf everywhere and a zero gradient (never NaN). x of rank >= 1. Semantic op
// "oa::ml::log_softmax".
Matrix log_softmax(const Matrix& x);

}  // namespace oa::ml
