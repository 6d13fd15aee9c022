#pragma once
// Embedding lookup (oa::ml).
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <cstdint>
#include <span>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Embedding lookup (torch.nn.functional.embedding): indices i32 [...] (rank
// <= 7) and weight [V, D] give [..., D] with out[..., :] = weight[index, :].
// An index outside [0, V) gives a zero row and no gradient, and is found by
// the kernel: the next synchronize on the engine, or a host read once the GPU
// has run the op, throws Error(OutOfRange) naming the op, the index and the
// weight (a device check, Engine::register_device_check; no host round trip
// at the op). The
// weight gradient is a deterministic segmented reduction (the indices sorted
// by a bitonic network, then each vocabulary row summed in position order).
// Semantic op "oa::ml::embedding"; inputs indices, weight.
Matrix embedding(const Matrix& indices, const Matrix& weight);
// The same with indices from the host, shaped `shape` (values.size() must be
// its element count): every index is checked (InvalidArgument naming the
// position and value when outside [0, V)) before they are uploaded.
Matrix embedding(std::span<const std::int32_t> indices, const Shape& shape, const Matrix& weight);

}  // namespace oa::ml
