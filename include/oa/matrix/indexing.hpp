#pragma once
// Indexing and selection (oa::matrix): index_select, gather, scatter_add,
// where, masked_fill. Values are F32 (index_select and gather also copy I32);
// indices are I32 Matrices (oa's index dtype, as embedding and argmax use; PyTorch
// takes int64); conditions and masks are Bool Matrices (as attention's
// masks). Results are new contiguous Matrices.
//
// Axes may be negative (-1 is the last). x is viewed as [outer, N, inner]
// around `dim`.
//
// Indices out of range. Indices given as a Matrix live on the device, and
// checking them would cost a host round trip, so they are not checked (host
// indices given to index_select's span form are, and refused) (PyTorch raises a
// device-side assert instead). The rule, the one embedding follows: an index
// outside [0, N) (negative ones included: they do not count from the end)
// selects nothing: index_select and gather give 0 at that position and pass
// it no gradient; scatter_add adds nothing for it (and its src element gets a
// zero gradient).
//
// Determinism. The scatter-adds (scatter_add and the backward of index_select
// and gather) use no atomics: each result element scans the K indices of its
// line along `dim` and sums the matching values in increasing index position,
// so results are bitwise reproducible. Cost O(numel(x) * K): meant for K up to
// a few thousand (for a large vocabulary lookup use oa::ml::embedding, whose
// gradient sorts the indices).
//
// Errors (oa::Error, InvalidArgument, naming the op, the argument and the
// shapes; nothing is recorded): undefined operands, operands on different
// engines, a value dtype other than f32 (f32 or i32 for index_select and
// gather), an index that is not i32, a condition or mask that is not bool, an
// axis out of range, rank-0 x, shapes as each op states, element counts past
// 2^32 - 1.
#include <cstdint>
#include <span>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// The entries of x at `index` along dim (torch.index_select(x, dim, index)):
// index is [K] (or a rank-0 one element); the result has x's shape with
// extent K at dim, result[..., k, ...] = x[..., index[k], ...]. Gradient to x:
// the result's gradient scatter-added into zeros (see the top of this file).
// Errors: index of rank > 1. Semantic op "oa::matrix::index_select",
// attribute dim (non-negative).
Matrix index_select(const Matrix& x, int dim, const Matrix& index);
// The same with indices from the host ([K]): every index is checked
// (InvalidArgument naming its position and value when outside [0, N), before
// anything is uploaded or recorded), then they are uploaded.
Matrix index_select(const Matrix& x, int dim, std::span<const std::int32_t> index);

// Entries of x along dim picked per position (torch.gather(x, dim, index)):
// index has x's rank and, outside dim, extents no larger than x's; the result
// has index's shape, result[c] = x[c with c_dim = index[c]]. Gradient to x: a
// scatter-add of the result's gradient. Where index is smaller than x outside
// dim, x is first cut to index's extents (a recorded oa::matrix::slice).
// Errors: index of another rank than x or larger than x outside dim.
// Semantic op "oa::matrix::gather", attribute dim.
Matrix gather(const Matrix& x, int dim, const Matrix& index);

// x with src's entries added at `index` along dim (torch.scatter_add(x, dim,
// index, src)): out = copy of x; out[c with c_dim = index[c]] += src[c] for
// every coordinate c of index. index has x's rank and x's extents outside
// dim (PyTorch also allows smaller ones; oa refuses them), src has at least
// index's extents on every axis (where larger, it is first cut to index's
// shape, a recorded oa::matrix::slice). Gradients: to x the result's gradient,
// to src gather(gy, dim, index). Semantic op "oa::matrix::scatter_add",
// attribute dim.
Matrix scatter_add(const Matrix& x, int dim, const Matrix& index, const Matrix& src);

// x where condition holds, else y (torch.where(condition, x, y)): condition
// bool, x and y f32; the three broadcast together by NumPy's rules (right
// aligned, extents equal or 1, any pattern) to the result's shape. Gradients:
// to x the result's gradient where condition holds (0 elsewhere), to y where
// it does not, summed back over broadcast axes; none to condition. An x or y
// of another shape than the result is first broadcast by oa::matrix::expand
// (recorded as such; its gradient is summed back there). Errors: shapes that
// do not broadcast (naming all three). Semantic op "oa::matrix::where".
Matrix where(const Matrix& condition, const Matrix& x, const Matrix& y);

// x with `value` where mask holds (torch.masked_fill(x, mask, value)): mask
// bool, broadcast with x by NumPy's rules; the result has the broadcast shape
// (x broadcast first by oa::matrix::expand where smaller). Gradient to x: the
// result's gradient where mask does not hold (0 where it does); none to mask.
// Errors: shapes that do not broadcast. Semantic op "oa::matrix::masked_fill",
// attribute value.
Matrix masked_fill(const Matrix& x, const Matrix& mask, float value);

}  // namespace oa::matrix
