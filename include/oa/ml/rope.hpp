#pragma once
// Rotary position embedding (oa::ml::rope).
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <cstdint>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Rotary position embedding (Su et al. 2021, "RoFormer: Enhanced Transformer
// with Rotary Position Embedding") in the half-split layout of GPT-NeoX and
// Llama (their rotate_half): for x [..., S, D], typically [B, H, S, D] from a
// permute, the feature pairs (i, i + D / 2) of position s are rotated by the
// angle (offset + s) * base^(-2i / D) radians:
//   y_i       = x_i cos a - x_{i+D/2} sin a,
//   y_{i+D/2} = x_{i+D/2} cos a + x_i sin a.
// offset: the position of the first row (the cached length when decoding).
// Angles are computed in f32 (as Llama's and GPT-NeoX's f32 frequency tables),
// so positions in the millions lose the low bits of their angle.
// x f32 of rank >= 2 with an even D >= 2 and S >= 1; offset >= 0 with
// offset + S at most 2^24 (every position exact in f32); base > 0. The gradient for x is the
// inverse rotation of the output gradient. Throws InvalidArgument naming
// "oa::ml::rope", the argument and x's shape otherwise. Semantic op
// "oa::ml::rope", attributes offset and base.
Matrix rope(const Matrix& x, std::int64_t offset = 0, double base = 10000.0);

}  // namespace oa::ml
