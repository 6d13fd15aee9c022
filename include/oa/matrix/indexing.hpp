#pragma once
// Indexing and selection (oa::matrix): index_select, gather, scatter_add,
// where, masked_fill, masked_select, nonzero, tril, triu, one_hot, take_along_axis, topk. Values
// are of every dtype, F32, F16, BF16, I32 and Bool, moved as bits (index_select,
// gather, take_along_axis, masked_select, tril, triu, where, masked_fill;
// nonzero reads every dtype), except scatter_add (F32, F16, BF16, I32) and
// topk (F32, F16, BF16, I32); gradients of 16-bit values are 16-bit;
// indices are I32 Matrices (oa's index dtype, as embedding and argmax use; PyTorch
// takes int64); conditions and masks are Bool Matrices (as attention's
// masks). Results are new contiguous Matrices.
//
// Axes may be negative (-1 is the last). x is viewed as [outer, N, inner]
// around `dim`.
//
// Indices out of range. Indices given as a Matrix live on the device: an
// index outside [0, N) (negative ones included: they do not count from the
// end) given to index_select, gather, take_along_axis or scatter_add is found
// by the kernel (which gives 0 at that position, or adds nothing for it), and
// the next synchronize on the engine, or a host read once the GPU has run the
// op (Engine::register_device_check says when), throws Error(OutOfRange)
// naming the op, the index, x and the extent (a device check,
// Engine::register_device_check, as PyTorch's device-side asserts on CUDA; no
// host round trip at the op), as embedding does. Host indices given to
// index_select's span form are checked before the upload and refused
// (InvalidArgument). one_hot checks its classes so too.
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
// engines, a bool x for scatter_add (x and src of one dtype) and topk, an index
// that is not i32, a
// condition or mask that is not bool, an axis out of range, rank-0 x, shapes
// as each op states, element counts past 2^32 - 1.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// The entries of x at `index` along dim (torch.index_select(x, dim, index)):
// index is [K] (or a rank-0 one element); the result has x's shape with
// extent K at dim, result[..., k, ...] = x[..., index[k], ...]. Gradient to x:
// the result's gradient scatter-added into zeros (see the top of this file;
// a 16-bit gradient summed in f32 and rounded once, as for gather,
// take_along_axis and topk).
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

// Entries of x picked along `axis` (numpy.take_along_axis(x, indices, axis),
// torch.take_along_dim(x, indices, axis)): indices i32 with x's rank; outside
// the axis x and indices broadcast by NumPy's rules (extents equal or 1),
// each first expanded by oa::matrix::expand where smaller (recorded); the
// result has the broadcast extents and indices' extent along the axis,
// result[c] = x[c with c_axis = indices[c]], so take_along_axis(x,
// argmax(x, true), -1) gives each row's maximum. x of any dtype. Gradient to
// x: a scatter-add of the result's gradient (summed back over broadcast
// axes). Errors: indices of another rank than x, extents outside the axis
// that do not broadcast, an axis out of range. Semantic op
// "oa::matrix::take_along_axis", attribute dim (the axis, non-negative).
Matrix take_along_axis(const Matrix& x, const Matrix& indices, int axis);

// The k largest (largest true) or smallest entries of x along `axis`, in
// order (torch.topk(x, k, axis, largest, sorted=True)): x f32, f16, bf16 or
// i32 (compared in its own order: i32 exactly); values (x's dtype, its
// elements' bits) and indices (i32, positions along the axis) have x's shape
// with extent k at the axis. Order: the larger (smaller) value first; NaN counts as larger
// than every number (first when largest, last otherwise, as PyTorch); equal
// values, -0 and +0 included, come in increasing position (PyTorch leaves the
// order of ties unspecified). Gradient to x through the values: their
// gradient scatter-added at the indices (0 elsewhere); none through the
// indices. Cost: each element of a line of N scans the line (O(N^2) a line,
// leaving early once k elements beat it): meant for N up to a few thousand.
// Errors: rank-0 x, an axis out of range, k outside [0, N], a bool x, more
// than 2^32 - 1 elements. Semantic op "oa::matrix::topk", attributes k, dim
// (the axis, non-negative), largest; outputs values, indices.
struct TopK {
  Matrix values, indices;
};
TopK topk(const Matrix& x, std::int64_t k, int axis = -1, bool largest = true);

// x with src's entries added at `index` along dim (torch.scatter_add(x, dim,
// index, src)): out = copy of x; out[c with c_dim = index[c]] += src[c] for
// every coordinate c of index. index has x's rank and x's extents outside
// dim (PyTorch also allows smaller ones; oa refuses them), src has at least
// index's extents on every axis (where larger, it is first cut to index's
// shape, a recorded oa::matrix::slice). x and src have one dtype, f32, f16,
// bf16 or i32, the result's: f16 and bf16 are summed in f32 and rounded once;
// i32 is exact (wrapping past the int32 range, as torch's integer adds).
// Gradients (floating dtypes): to x the result's gradient, to src
// gather(gy, dim, index). Semantic op "oa::matrix::scatter_add", attribute dim.
Matrix scatter_add(const Matrix& x, int dim, const Matrix& index, const Matrix& src);

// The entries (rows) of x where mask holds (PyTorch's x[mask]; with mask of
// x's shape, torch.masked_select(x, mask) without broadcasting): mask is bool
// with x's leading extents [d0, ..., dk-1] (1 <= k <= rank of x); x is
// [d0, ..., dk-1, rest...], of any dtype; the result is [count, rest...], the
// selected entries in the mask's row-major order. The count depends on the
// mask's values, so this reads the mask back to the host: it waits for the
// work recorded so far (a synchronization, as torch.masked_select costs on a
// GPU). A composition: the leading axes merged (a reshape), then one
// index_select of the selected positions (recorded as
// "oa::matrix::index_select"); gradient to x as index_select's, none to mask.
// Errors: rank-0 x, a mask that is not bool, of rank 0 or of other leading
// extents than x, more than 2^31 - 1 mask elements.
Matrix masked_select(const Matrix& x, const Matrix& mask);

// x where condition holds, else y (torch.where(condition, x, y)): condition
// bool, x and y of one dtype, f32, f16, bf16, i32 or bool (the result's dtype;
// i32 and bool have no gradient); the three broadcast together by NumPy's rules (right
// aligned, extents equal or 1, any pattern) to the result's shape. Gradients:
// to x the result's gradient where condition holds (0 elsewhere), to y where
// it does not, summed back over broadcast axes; none to condition. An x or y
// of another shape than the result is first broadcast by oa::matrix::expand
// (recorded as such; its gradient is summed back there). Errors: shapes that
// do not broadcast (naming all three). Semantic op "oa::matrix::where".
Matrix where(const Matrix& condition, const Matrix& x, const Matrix& y);

// x with `value` where mask holds (torch.masked_fill(x, mask, value)): x f32,
// f16, bf16 (the result's dtype; `value` rounded to it to nearest even), i32
// (`value` truncated toward zero, as torch converts) or bool (true for any
// nonzero value, NaN and infinities included, false for +-0: torch's
// conversion to bool, which never overflows), mask bool, broadcast
// with x by NumPy's rules; the result has the broadcast shape (x broadcast
// first by oa::matrix::expand where smaller). Gradient to x (float dtypes):
// the result's gradient where mask does not hold (0 where it does); none to
// mask.
// Errors: shapes that do not broadcast; a value x's dtype cannot hold (torch
// raises too): for a float dtype a finite value past its largest finite one
// (f16 65504, bf16 about 3.39e38, f32 about 3.40e38; infinities fill), for i32
// a value not finite or outside [-2^31, 2^31) after truncation. Semantic op
// "oa::matrix::masked_fill", attribute value.
Matrix masked_fill(const Matrix& x, const Matrix& mask, double value);

// The coordinates of x's nonzero elements (torch.nonzero(x)): x of any dtype
// and rank (a float element is nonzero when it is not +-0, NaN included; a
// bool one when true); the result is i32 [K, rank of x], one row per nonzero
// element in row-major order (a rank-0 x gives [1, 0] or [0, 0], an empty x
// [0, rank]). K depends on x's values: nonzero counts them on the device
// (a non-bool x: oa::matrix::cast to f32 unless f32, then oa::matrix::ne with
// 0; then oa::matrix::sum, each recorded)
// and reads the count back, a synchronization that waits for the work
// recorded so far (as torch.nonzero on a GPU); only the 4-byte count is read.
// The coordinates are then found on the device (per block of 1024 elements
// a count, the counts' prefix sum, a scatter of each block's coordinates).
// No gradient (an integer result). Errors: an undefined x, more than 2^31 - 1
// elements. Semantic op "oa::matrix::nonzero" over the bool flags (x itself
// when bool), attribute count (K).
Matrix nonzero(const Matrix& x);

// torch.where(condition) (torch.nonzero(condition, as_tuple=True)): one i32
// [K] vector per axis of condition, the d-th holding coordinate d of each
// nonzero element, in nonzero()'s order (a rank-0 condition counts as [1]:
// one vector, [0] when it is nonzero). condition of any dtype. Cost and
// synchronization as nonzero(), plus one oa::matrix::slice per axis for a
// condition of rank 2 or more. No gradient. Errors as nonzero().
std::vector<Matrix> where(const Matrix& condition);

// The lower (tril) or upper (triu) triangle of each matrix of x
// (torch.tril(x, diagonal), torch.triu(x, diagonal)): x is [..., R, C] (rank
// >= 2, any leading batch axes), of any dtype (torch.triu(ones(n, n,
// dtype=bool), 1) is the usual causal mask); the result has x's shape and
// dtype, with element (r, c) of each matrix kept when c - r <= diagonal
// (tril) or c - r >= diagonal (triu) and 0 elsewhere. diagonal 0 is the main
// diagonal, > 0 above it, < 0 below; any value (past the matrix it keeps all
// or nothing). Gradient to x: the result's gradient under the same mask.
// Errors: rank below 2, a matrix extent past 2^31 - 1. Semantic ops
// "oa::matrix::tril", "oa::matrix::triu", attribute diagonal.
Matrix tril(const Matrix& x, std::int64_t diagonal = 0);
Matrix triu(const Matrix& x, std::int64_t diagonal = 0);

// One-hot encoding (torch.nn.functional.one_hot(indices, num_classes)):
// indices i32 [...] (rank <= 7) give `dtype` [..., num_classes] with
// result[..., k] = 1 where indices[...] == k, else 0. dtype is f32 (the
// default: the result feeds f32 arithmetic, a matmul, a masked loss) or i32
// (torch's integer result; oa has no int64). num_classes is
// required (PyTorch's -1, the largest index plus one, would read the indices
// back to the host). An index outside [0, num_classes) gives a row of zeros
// and raises OutOfRange later (the rule at the top of this
// file). Not differentiable. Errors: indices not i32, num_classes
// outside [1, 2^31 - 1], another dtype, indices of rank 8, more than
// 2^32 - 1 result elements. Semantic op "oa::matrix::one_hot", attributes
// num_classes and dtype.
Matrix one_hot(const Matrix& indices, std::int64_t num_classes, DType dtype = DType::F32);
// The same with indices from the host, shaped `shape` (indices.size() must be
// its element count): every index is checked (InvalidArgument naming its
// position and value when outside [0, num_classes), before anything is
// uploaded or recorded), then they are uploaded to `engine` (the default
// engine when not given).
Matrix one_hot(std::span<const std::int32_t> indices, const Shape& shape, std::int64_t num_classes, std::optional<Engine> engine = {});

}  // namespace oa::matrix
