#pragma once
// Reductions (oa::matrix). F32 input, row-major, contiguous.
//
// The last-axis forms view x [..., L] as rows of length L and give [...]
// (or [..., 1] with keepdim). The *_all forms reduce every element to a
// rank-0 Matrix []. Each is a cooperative tree reduction inside a workgroup;
// rows longer than one workgroup's share are reduced in several passes over
// fixed segments, so results are bitwise reproducible on one device (no
// atomics). Any number of rows (grids past the device's workgroup-count limit
// are split) and any row length.
//
// Empty rows: sum gives 0, mean gives NaN (torch.sum / torch.mean); max,
// argmax and argmin throw InvalidArgument. Rank-0 x is rejected by the last-axis forms.
// Errors (oa::Error, kind InvalidArgument) name the op and the shape: undefined
// or non-f32 x, rank 0, an empty reduced axis where no identity exists.
#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// Sum over the last axis (torch.sum(x, -1, keepdim)). Semantic op "oa::matrix::sum".
Matrix sum(const Matrix& x, bool keepdim = false);
// Mean over the last axis (torch.mean(x, -1, keepdim)). Semantic op "oa::matrix::mean".
Matrix mean(const Matrix& x, bool keepdim = false);
// Maximum over the last axis (torch.amax(x, -1, keepdim)); NaN propagates.
// Semantic op "oa::matrix::max".
Matrix max(const Matrix& x, bool keepdim = false);
// Index of the maximum over the last axis as I32 (torch.argmax(x, -1, keepdim)):
// the first index of the maximum; a NaN counts as the maximum. Throws
// InvalidArgument when L exceeds INT32_MAX. Semantic op "oa::matrix::argmax".
Matrix argmax(const Matrix& x, bool keepdim = false);
// Index of the minimum over the last axis as I32 (torch.argmin(x, -1, keepdim)):
// the first index of the minimum; a NaN counts as the minimum (as PyTorch,
// NaN propagates); -0 and +0 tie. Throws InvalidArgument when L exceeds
// INT32_MAX. Semantic op "oa::matrix::argmin".
Matrix argmin(const Matrix& x, bool keepdim = false);

// Sum, mean and maximum of all elements -> []. Semantic ops "oa::matrix::sum_all",
// "oa::matrix::mean_all", "oa::matrix::max_all".
Matrix sum_all(const Matrix& x);
Matrix mean_all(const Matrix& x);
Matrix max_all(const Matrix& x);

// Sums x down to `target`, the inverse of the broadcasting of oa::matrix's
// binary ops (oa/matrix/elementwise.hpp): target is x's shape, a scalar ([] or
// all-ones), or its non-unit extents (right aligned) equal one contiguous run
// of x's axes, e.g. [C] against [N, C], [C] or [1, C, 1, 1] against NCHW.
// Gives a Matrix of shape `target` whose element c is the sum of x over every
// element that c was broadcast to. Used for the gradients of broadcast
// operands. Throws InvalidArgument naming both shapes for any other target.
// Semantic op "oa::matrix::sum_to".
Matrix sum_to(const Matrix& x, const Shape& target);

}  // namespace oa::matrix
