#pragma once
// Concatenation and its inverse along one axis (oa::matrix). F32, row-major,
// contiguous; the results are new contiguous Matrices (oa has no strided views).
//
// Axes may be negative (-1 is the last axis). Both ops view their operands as
// [outer, extent(axis) * inner] rows, outer the product of the extents before
// `axis` and inner of those after it, and copy column blocks of those rows with
// one dispatch per part (each thread copies 4 elements; rows past the device's
// maxStorageBufferRange are split across dispatches). Zero extents are
// allowed and give empty results.
//
// Errors (oa::Error, kind InvalidArgument, naming the op, the argument and the
// shapes; nothing is recorded): undefined or non-f32 operands, rank 0, an axis
// out of range, operands on different engines, shapes that disagree outside
// `axis`, an extent not divisible by `parts`, parts < 1, element counts past
// 2^32 - 1.
#include <cstdint>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// Concatenates xs (at least one) along `axis` (torch.cat(xs, axis)): every
// operand has the shape of the first except at `axis`; the result's extent
// there is the sum. Gradients flow to every operand (the matching slice of the
// output's gradient). Semantic op "oa::matrix::concat" (variadic inputs),
// attribute axis (normalised to be non-negative).
Matrix concat(const std::vector<Matrix>& xs, int axis = -1);

// Splits x into `parts` equal slices along `axis` (torch.chunk(x, parts, axis)
// where the extent is divisible by parts; parts is at most the extent, 1 for
// an empty axis): slice p holds indices
// [p * n / parts, (p + 1) * n / parts) of that axis. Gradients flow back as the
// concatenation of the slices' gradients (zeros for a slice that got none).
// Semantic op "oa::matrix::chunk" with `parts` outputs, attributes parts, axis.
std::vector<Matrix> chunk(const Matrix& x, std::int64_t parts, int axis = -1);

}  // namespace oa::matrix
