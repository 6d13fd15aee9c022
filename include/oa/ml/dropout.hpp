#pragma once
// Dropout (oa::ml).
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <cstdint>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Dropout (Srivastava et al. 2014; torch.nn.functional.dropout): in training,
// element i is zeroed with probability p and otherwise scaled by 1 / (1 - p);
// the mask comes from the counter-based Philox-4x32-10 generator keyed by
// `seed` (element i is kept when Matrix::uniform(x.shape(), 0, 1, seed)'s
// element i is >= p), so it is the same on every device and the backward pass
// regenerates it rather than storing it. Outside training (or never) x is
// returned as is and nothing is recorded. p in [0, 1]. Semantic op
// "oa::ml::dropout", attributes p, seed.
Matrix dropout(const Matrix& x, double p, std::uint64_t seed, bool training = true);

}  // namespace oa::ml
