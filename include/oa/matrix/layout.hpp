#pragma once
// Views and layout (oa::matrix): permute, transpose of two axes, slicing,
// expand, squeeze / unsqueeze, flatten / unflatten. Every dtype: F32, F16,
// BF16, I32 and Bool (permute, slice, narrow, expand move the elements' bits;
// only the floating dtypes have gradients). The gradient of a 16-bit expand is
// summed in f32 and rounded once.
//
// Cost model. A Matrix is always contiguous and row-major: oa has no strided
// views. The reshaping views (squeeze, unsqueeze, flatten, unflatten, like
// Matrix::reshape) share the storage and record nothing. The views that move
// elements (permute, transpose, slice, narrow, expand) materialise their result with
// one strided-copy dispatch that reads and writes each result element once
// (as x.permute(...).contiguous() costs in PyTorch); their backward is one
// such dispatch too (slice: a fill of zeros and a scatter).
//
// Axes may be negative (-1 is the last). Errors (oa::Error, InvalidArgument,
// naming the op, the argument and the shape; nothing is recorded): an
// undefined Matrix, an axis out of range, a dims list that is not a
// permutation, a step below 1, a narrow outside the axis, unflatten sizes whose product differs from the
// extent, element counts past 2^32 - 1. ResourceExhausted when an operand exceeds the device's
// maxStorageBufferRange.
#include <cstdint>
#include <optional>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// x with its axes reordered: result axis k is x's axis dims[k]
// (torch.permute). Gradient: the inverse permutation. Semantic op
// "oa::matrix::permute", attribute dims (normalised to be non-negative).
Matrix permute(const Matrix& x, const std::vector<std::int64_t>& dims);

// x with axes dim0 and dim1 swapped (torch.transpose(x, dim0, dim1)), a
// permute (recorded as "oa::matrix::permute").
Matrix transpose(const Matrix& x, int dim0, int dim1);

// The elements start, start + step, ... before stop along `axis`, as Python's
// x[..., start:stop:step] (torch.Tensor slicing): negative start and stop
// count from the end, both are clamped to the axis, an empty range gives an
// empty axis; start defaults to 0, stop to the extent. step >= 1. Gradient:
// gy scattered into zeros. Semantic op "oa::matrix::slice", attributes axis,
// start, stop, step (normalised: 0 <= start <= stop <= extent).
Matrix slice(const Matrix& x, int axis, std::optional<std::int64_t> start = {}, std::optional<std::int64_t> stop = {},
             std::int64_t step = 1);

// `length` elements from `start` along `axis` (torch.narrow): start may be
// negative (counted from the end); the range must lie inside the axis. A slice.
Matrix narrow(const Matrix& x, int axis, std::int64_t start, std::int64_t length);

// x broadcast to `shape` (torch.Tensor.expand): shape has x's rank or more;
// x's axes align with its last ones; -1 keeps x's extent there (not allowed
// on the new leading axes); only an extent of 1 (or a new axis) takes another
// extent, including 0. x of any dtype (bool included; only floating ones have
// a gradient). oa has no strided views: the result is materialised
// by one strided copy that reads each of x's elements as often as it is
// repeated; a shape equal to x's returns x itself (nothing recorded).
// Gradient: the result's gradient summed over the broadcast axes (recorded
// as oa::matrix::permute when those are not already the trailing ones, then
// oa::matrix::sum). Errors: a shape of fewer axes than x or more than 8, an
// extent other than 1 asked to change, -1 on a new axis, a negative extent.
// Semantic op "oa::matrix::expand", attribute shape (no -1 left).
Matrix expand(const Matrix& x, const std::vector<std::int64_t>& shape);

// Without `axis`, x without all its extents of 1; with it, without that axis
// when its extent is 1, else x as is (torch.squeeze). A reshape.
Matrix squeeze(const Matrix& x, std::optional<int> axis = {});

// x with a new axis of extent 1 at `axis` (-1 appends one; torch.unsqueeze).
// A reshape.
Matrix unsqueeze(const Matrix& x, int axis);

// Axes start_dim..end_dim merged into one (torch.flatten; a rank-0 x gives
// [1]). A reshape.
Matrix flatten(const Matrix& x, int start_dim = 0, int end_dim = -1);

// Axis `axis` split into `sizes` (one of them may be -1, inferred;
// torch.unflatten). A reshape.
Matrix unflatten(const Matrix& x, int axis, const std::vector<std::int64_t>& sizes);

}  // namespace oa::matrix
